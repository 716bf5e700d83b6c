//! canopy's PostgreSQL backend: one table of fragments in a schema of a
//! PostgreSQL database, `postgres://USER:PASSWORD@HOST:PORT/DB?schema=S`.
//!
//! * The table `S.canopy_kv(k bytea PRIMARY KEY, v bytea NOT NULL)`:
//!   PostgreSQL compares `bytea` bytewise (shorter first on a common prefix),
//!   which is canopy's key order, so a subtree is one range of the primary
//!   key's B-tree: a scan is `k >= $1 AND k < $2 ORDER BY k`, a subtree
//!   delete one `DELETE` of that range. The revision and the layout version
//!   are rows of the table (`keys::REVISION`, `keys::FORMAT`), as in every
//!   backend. One schema per store: several stores share a database.
//! * Snapshots are `REPEATABLE READ` transactions: every statement of one sees
//!   the database as of its first statement, which reads the revision.
//! * A commit is the transaction [`Backend::begin_write`] opened (also
//!   `REPEATABLE READ`, its reads are the view the engine builds the batch
//!   on): one conditional update of the revision row (`WHERE v = the revision
//!   read`), then the batch's operations, then `COMMIT`. A writer that
//!   committed since the view's first read makes the update fail with a
//!   serialization error (or find no row): the batch is refused as a
//!   `Conflict` and nothing of it is written. Writers do not hold a lock
//!   while the engine builds a batch; the revision row's lock is taken by the
//!   commit itself.
//! * Operations go in runs: consecutive puts are one `INSERT ... SELECT FROM
//!   unnest($1::bytea[], $2::bytea[]) ON CONFLICT DO UPDATE` per 10,000 keys,
//!   consecutive deletes one `DELETE ... WHERE k = ANY($1)`; statements are
//!   prepared once per connection.
//! * `sync=commit`: `synchronous_commit=on` (the server's default): `COMMIT`
//!   returns once the commit is flushed to the server's WAL. `sync=off`:
//!   `synchronous_commit=off`: a crash of the server may lose the last commits
//!   (up to three times `wal_writer_delay`), never a part of one.
//! * Connections are pooled; a pooled connection found closed (the server was
//!   restarted) is replaced once, transparently.

mod lease;

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use canopy_store::backend::{prefix_end, Announcements, Backend, Batch, BatchOp, Snapshot, SyncMode, Visit, WriteView};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::keys::{FORMAT, FORMAT_VERSION, REVISION};
use canopy_store::StoreUrl;
use postgres::error::SqlState;
use postgres::{Client, NoTls, SimpleQueryMessage, Statement};

/// How long opening a connection may take (URL: `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle connections kept for later snapshots and commits.
const MAX_IDLE: usize = 8;
/// The table, in the store's schema.
const TABLE: &str = "canopy_kv";
/// Rows of the first page of a scan, then four times more per page up to
/// [`MAX_PAGE`]: a scan that stops early reads little, a long one takes few
/// round trips.
const FIRST_PAGE: i64 = 64;
const MAX_PAGE: i64 = 4096;
/// Keys per statement of a batch.
const CHUNK: usize = 10_000;

/// The statements of a connection, prepared when first used.
#[derive(Clone, Copy)]
enum Sql {
    Get,
    ScanTo,
    ScanFrom,
    ScanToRev,
    ScanFromRev,
    PutMany,
    DeleteMany,
    DeleteRange,
    DeleteFrom,
    BumpRevision,
    PutRevision,
    GetMany,
}

const SQL_COUNT: usize = 12;

fn sql_text(table: &str, which: Sql) -> String {
    match which {
        Sql::Get => format!("SELECT v FROM {table} WHERE k = $1"),
        Sql::GetMany => format!("SELECT k, v FROM {table} WHERE k = ANY($1::bytea[])"),
        Sql::ScanTo => format!("SELECT k, v FROM {table} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3"),
        Sql::ScanFrom => format!("SELECT k, v FROM {table} WHERE k >= $1 ORDER BY k LIMIT $2"),
        Sql::ScanToRev => format!("SELECT k, v FROM {table} WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3"),
        Sql::ScanFromRev => format!("SELECT k, v FROM {table} WHERE k >= $1 ORDER BY k DESC LIMIT $2"),
        Sql::PutMany => format!(
            "INSERT INTO {table}(k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
             ON CONFLICT (k) DO UPDATE SET v = excluded.v"
        ),
        Sql::DeleteMany => format!("DELETE FROM {table} WHERE k = ANY($1::bytea[])"),
        Sql::DeleteRange => format!("DELETE FROM {table} WHERE k >= $1 AND k < $2"),
        Sql::DeleteFrom => format!("DELETE FROM {table} WHERE k >= $1"),
        Sql::BumpRevision => format!("UPDATE {table} SET v = $2 WHERE k = $1 AND v = $3"),
        Sql::PutRevision => {
            format!("INSERT INTO {table}(k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v")
        }
    }
}

/// A connection and its prepared statements.
struct Conn {
    client: Client,
    statements: [Option<Statement>; SQL_COUNT],
}

impl Conn {
    fn statement(&mut self, pg: &PostgresBackend, which: Sql) -> Result<Statement> {
        let slot = &mut self.statements[which as usize];
        if let Some(st) = slot {
            return Ok(st.clone());
        }
        let st = self.client.prepare(&pg.sql[which as usize]).map_err(|e| pg.err("prepare a statement", e))?;
        *slot = Some(st.clone());
        Ok(st)
    }
}

/// A store in one schema of a PostgreSQL database.
pub struct PostgresBackend {
    config: postgres::Config,
    /// `postgres server HOST:PORT (database D, schema S)`: what messages name.
    place: String,
    /// `"S".canopy_kv`
    table: String,
    sql: Vec<String>,
    sync: SyncMode,
    connect_timeout: Duration,
    idle: Mutex<Vec<Conn>>,
    /// How long a lease outlives a holder that stopped pinging it (`lease`).
    lease_time: Duration,
    /// The `NOTIFY` channel of the store's commits: `canopy_` and a hash of
    /// the table's name (a channel name is at most 63 bytes).
    channel: String,
}

impl Drop for PostgresBackend {
    /// Closes the pooled connections on a thread of their own: closing one
    /// blocks on the client's runtime, which panics on a thread that drives
    /// another async runtime (a store dropped inside a server's task).
    fn drop(&mut self) {
        let pool = std::mem::take(self.idle.get_mut().unwrap_or_else(|p| p.into_inner()));
        if !pool.is_empty() {
            // With no thread to be had, the closure and the pool with it are
            // dropped here instead.
            std::thread::scope(|s| {
                let _ = std::thread::Builder::new().spawn_scoped(s, move || drop(pool));
            });
        }
    }
}

/// The parts of a `postgres://` URL.
struct Target {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    database: String,
    schema: String,
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

fn parse_target(url: &StoreUrl) -> Result<Target> {
    let bad =
        |why: String| StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {why}", url.redacted()));
    let parsed = url::Url::parse(&format!("postgres:{}", url.location)).map_err(|e| bad(e.to_string()))?;
    let host = match parsed.host_str() {
        Some(h) if !h.is_empty() => h.trim_start_matches('[').trim_end_matches(']').to_string(),
        _ => return Err(bad("no server host (postgres://USER@HOST:PORT/DATABASE)".into())),
    };
    let user = match decode(parsed.username()) {
        u if u.is_empty() => "postgres".to_string(),
        u => u,
    };
    let database = match decode(parsed.path().trim_start_matches('/')) {
        d if d.is_empty() => user.clone(),
        d if d.contains('/') => return Err(bad(format!("`{d}` is not a database name"))),
        d => d,
    };
    let schema = url.params.get("schema").cloned().unwrap_or_else(|| "public".into());
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(bad(format!(
            "schema `{schema}`: expected up to 63 letters, digits and `_`, not starting with a digit"
        )));
    }
    Ok(Target {
        host,
        port: parsed.port().unwrap_or(5432),
        user,
        password: parsed.password().map(decode),
        database,
        schema,
    })
}

/// What a statement's error means for canopy, with the server's words.
fn pg_err(place: &str, what: &str, e: &postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error() else {
        // A closed connection, or a socket error talking to the server (reset,
        // broken pipe, timed out): the server is away, not the request wrong.
        let socket = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
        let kind = if e.is_closed() || socket { ErrorKind::Unavailable } else { ErrorKind::Io };
        let detail = match std::error::Error::source(e) {
            Some(src) if !e.to_string().contains(&src.to_string()) => format!("{e}: {src}"),
            _ => e.to_string(),
        };
        let hint = if kind == ErrorKind::Unavailable {
            " (the server closed the connection: stopped, restarted or unreachable)"
        } else {
            ""
        };
        return StoreError::new(kind, format!("{place}: {what}: {detail}{hint}"));
    };
    let code = db.code();
    let kind = if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED {
        ErrorKind::Conflict
    } else if *code == SqlState::DISK_FULL || *code == SqlState::OUT_OF_MEMORY {
        ErrorKind::NoSpace
    } else if *code == SqlState::PROGRAM_LIMIT_EXCEEDED {
        ErrorKind::Unsupported
    } else if *code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED {
        ErrorKind::Corrupted
    } else if code.code().starts_with("08")
        || code.code().starts_with("28")
        || code.code().starts_with("57")
        || code.code().starts_with("53")
        || *code == SqlState::INSUFFICIENT_PRIVILEGE
        || *code == SqlState::INVALID_CATALOG_NAME
        || *code == SqlState::READ_ONLY_SQL_TRANSACTION
    {
        // Connection, authentication, shutdown, resources, permissions, a
        // missing database, a standby server.
        ErrorKind::Unavailable
    } else {
        ErrorKind::Io
    };
    let hint = if *code == SqlState::PROGRAM_LIMIT_EXCEEDED {
        " (a key longer than PostgreSQL's B-tree index allows, about 2,700 bytes?)"
    } else if kind == ErrorKind::Conflict {
        " (another writer committed first)"
    } else {
        ""
    };
    StoreError::new(kind, format!("{place}: {what}: {} ({}){hint}", db.message(), code.code()))
}

/// Whether `e` says the connection is gone (closed, or ended by the server:
/// class 08 connection exceptions, 57P01..57P03 shutdowns), not the statement wrong.
fn connection_lost(conn: &Conn, e: &postgres::Error) -> bool {
    conn.client.is_closed()
        || e.is_closed()
        || e.code().is_some_and(|c| c.code().starts_with("08") || c.code().starts_with("57P"))
}

/// The revision as stored: 8 bytes big-endian.
fn decode_revision(bytes: &[u8]) -> Option<u64> {
    bytes.try_into().ok().map(u64::from_be_bytes)
}

/// `\x0123...` (the text form of `bytea`) to bytes.
fn from_hex_text(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?;
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok()).collect()
}

fn to_hex_text(bytes: &[u8]) -> String {
    let mut s = String::from("\\x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

impl PostgresBackend {
    /// Opens the store a URL names:
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE?schema=S&sync=commit|off`
    /// (also `postgresql://`; `connect_timeout=5s`; `sslmode=disable|prefer`;
    /// `lease=10s`, the time of this process's lease, see [`Backend::lease`]).
    /// Creates the schema and its table when absent.
    ///
    /// # Errors
    /// `InvalidUrl` for a URL that does not parse or unknown parameters;
    /// `Unsupported` for `sslmode=require` (TLS is not built in);
    /// `Unavailable` when the server cannot be reached, refuses the login or
    /// the database does not exist; `Corrupted` when the schema holds a
    /// `canopy_kv` table of another shape.
    pub fn open_url(url: &StoreUrl) -> Result<PostgresBackend> {
        url.check_params(&["sync", "schema", "connect_timeout", "sslmode", "application_name", "lease"])?;
        let target = parse_target(url)?;
        let sync = url.sync_mode()?;
        let connect_timeout = url.duration("connect_timeout", CONNECT_TIMEOUT)?;
        let lease_time = canopy_store::lease::lease_time(url)?;
        let place = format!(
            "postgres server {}:{} (database {}, schema {})",
            target.host, target.port, target.database, target.schema
        );
        match url.params.get("sslmode").map(String::as_str) {
            None | Some("disable" | "prefer" | "allow") => {}
            Some(mode) => {
                return Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!("{place}: sslmode={mode}: TLS connections are not built into this backend yet"),
                ))
            }
        }
        let mut config = postgres::Config::new();
        config
            .host(&target.host)
            .port(target.port)
            .user(&target.user)
            .dbname(&target.database)
            .connect_timeout(connect_timeout)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .application_name(url.params.get("application_name").map_or("canopy", String::as_str));
        // A lost server is noticed within the TCP user timeout, not hours later.
        config.tcp_user_timeout(Duration::from_secs(30));
        let mut options = String::from("-c bytea_output=hex");
        if sync == SyncMode::Off {
            options.push_str(" -c synchronous_commit=off");
        }
        config.options(&options);
        if let Some(pw) = &target.password {
            config.password(pw);
        }
        let table = format!("\"{}\".{TABLE}", target.schema);
        // One statement text per kind (the array's length is checked).
        let kinds: [Sql; SQL_COUNT] = [
            Sql::Get,
            Sql::ScanTo,
            Sql::ScanFrom,
            Sql::ScanToRev,
            Sql::ScanFromRev,
            Sql::PutMany,
            Sql::DeleteMany,
            Sql::DeleteRange,
            Sql::DeleteFrom,
            Sql::BumpRevision,
            Sql::PutRevision,
            Sql::GetMany,
        ];
        let sql = kinds.iter().map(|w| sql_text(&table, *w)).collect();
        let channel = format!("canopy_{:016x}", fnv1a(table.as_bytes()));
        let backend = PostgresBackend {
            config,
            place,
            table,
            sql,
            sync,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
            lease_time,
            channel,
        };
        let mut conn = backend.connect()?;
        backend.init(&mut conn, &target.schema)?;
        backend.give_back(conn);
        Ok(backend)
    }

    fn err(&self, what: &str, e: postgres::Error) -> StoreError {
        pg_err(&self.place, what, &e)
    }

    /// The schema's table, created when absent (with the format and revision
    /// rows); one of another shape is refused.
    fn init(&self, conn: &mut Conn, schema: &str) -> Result<()> {
        let err = |e| self.err("create the store", e);
        let mut tx = conn.client.transaction().map_err(err)?;
        // Openers of one new store wait for each other here.
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&self.table]).map_err(err)?;
        let has_schema =
            tx.query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema]).map_err(err)?.is_some();
        if !has_schema {
            tx.batch_execute(&format!("CREATE SCHEMA \"{schema}\"")).map_err(err)?;
        }
        let columns: Vec<(String, String)> = tx
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
                &[&schema, &TABLE],
            )
            .map_err(err)?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        if columns.is_empty() {
            tx.batch_execute(&format!("CREATE TABLE {}(k bytea PRIMARY KEY, v bytea NOT NULL)", self.table))
                .map_err(err)?;
            let put = sql_text(&self.table, Sql::PutRevision);
            tx.execute(&put, &[&FORMAT, &FORMAT_VERSION.to_be_bytes().as_slice()]).map_err(err)?;
            tx.execute(&put, &[&REVISION, &0u64.to_be_bytes().as_slice()]).map_err(err)?;
        } else if columns != [("k".into(), "bytea".into()), ("v".into(), "bytea".into())] {
            let shape: Vec<String> = columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
            return Err(StoreError::corrupted(format!(
                "{}: not a canopy store (its table {TABLE} has columns {})",
                self.place,
                shape.join(", ")
            )));
        }
        tx.commit().map_err(err)
    }

    /// A new connection, within the connect timeout: the driver's own covers
    /// only the TCP connection, not a server that accepts and never answers,
    /// so the connection is made on a thread of its own (left behind, to end
    /// with its socket, when it times out).
    fn connect(&self) -> Result<Conn> {
        let (tx, rx) = std::sync::mpsc::channel();
        let config = self.config.clone();
        std::thread::Builder::new()
            .name("canopy-postgres-connect".into())
            .spawn(move || {
                let _ = tx.send(config.connect(NoTls));
            })
            .map_err(|e| StoreError::io(format!("{}: connect", self.place), e))?;
        let Ok(connected) = rx.recv_timeout(self.connect_timeout) else {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!(
                    "{}: unreachable (timed out after {:?} waiting for the server to answer)",
                    self.place, self.connect_timeout
                ),
            ));
        };
        match connected {
            Ok(client) => Ok(Conn { client, statements: Default::default() }),
            Err(e) if e.as_db_error().is_some() => Err(self.err("connect", e)),
            Err(e) => {
                let detail = match std::error::Error::source(&e) {
                    Some(src) => src.to_string(),
                    None => e.to_string(),
                };
                Err(StoreError::new(
                    ErrorKind::Unavailable,
                    format!("{}: unreachable (cannot connect: {detail})", self.place),
                ))
            }
        }
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn give_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// A connection in a new `REPEATABLE READ` transaction whose first
    /// statement read the revision, which it returns. A pooled connection the
    /// server closed is replaced (with the rest of the pool) once.
    fn begin(&self, read_only: bool) -> Result<(Conn, u64)> {
        self.read_revision(Some(read_only))
    }

    /// A pooled connection and the revision it read: in a transaction it
    /// began in the same round trip (`Some(read_only)`), or alone (`None`).
    fn read_revision(&self, begin: Option<bool>) -> Result<(Conn, u64)> {
        let query = format!(
            "{}SELECT v FROM {} WHERE k = '{}'::bytea",
            match begin {
                Some(true) => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; ",
                Some(false) => "BEGIN ISOLATION LEVEL REPEATABLE READ; ",
                None => "",
            },
            self.table,
            to_hex_text(REVISION)
        );
        let mut retried = false;
        loop {
            let pooled = self.idle().pop();
            let from_pool = pooled.is_some();
            let mut conn = match pooled {
                Some(c) => c,
                None => self.connect()?,
            };
            match conn.client.simple_query(&query) {
                Ok(messages) => {
                    let mut revision = 0;
                    for m in messages {
                        if let SimpleQueryMessage::Row(row) = m {
                            revision = row
                                .get(0)
                                .and_then(from_hex_text)
                                .as_deref()
                                .and_then(decode_revision)
                                .ok_or_else(|| self.damaged_revision())?;
                        }
                    }
                    return Ok((conn, revision));
                }
                Err(e) if from_pool && !retried && connection_lost(&conn, &e) => {
                    // The server ended it (a restart, an administrator): so
                    // were the other pooled connections, most likely.
                    self.idle().clear();
                    retried = true;
                }
                Err(e) => {
                    let what = if begin.is_some() { "begin a transaction" } else { "read the revision" };
                    return Err(self.err(what, e));
                }
            }
        }
    }

    fn damaged_revision(&self) -> StoreError {
        StoreError::corrupted(format!("{}: the revision record is damaged", self.place))
    }

    /// Ends the transaction of `conn` without writing and pools it again.
    fn end(&self, mut conn: Conn) {
        if conn.client.batch_execute("ROLLBACK").is_ok() {
            self.give_back(conn);
        }
    }

    /// Writes `batch` and the next revision in the open transaction of
    /// `conn`, which read `revision`, and commits it.
    fn write(&self, conn: &mut Conn, batch: &Batch, revision: u64, flush: bool) -> Result<u64> {
        if let Some(expect) = batch.expect_revision.filter(|e| *e != revision) {
            return Err(StoreError::stale_batch(expect, revision));
        }
        let err = |e| self.err("commit", e);
        let next = revision + 1;
        let bump = conn.statement(self, Sql::BumpRevision)?;
        let (next_bytes, read_bytes) = (next.to_be_bytes(), revision.to_be_bytes());
        let updated =
            conn.client.execute(&bump, &[&REVISION, &next_bytes.as_slice(), &read_bytes.as_slice()]).map_err(err)?;
        if updated != 1 {
            return Err(StoreError::new(
                ErrorKind::Conflict,
                format!("{}: another writer committed first (the revision is no longer {revision})", self.place),
            ));
        }
        let mut touched_revision = false;
        let ops = &batch.ops;
        let mut i = 0;
        while i < ops.len() {
            match &ops[i] {
                BatchOp::Put(..) => {
                    let run_end =
                        ops[i..].iter().position(|o| !matches!(o, BatchOp::Put(..))).map_or(ops.len(), |n| i + n);
                    // One statement may not write a key twice: the last put of a key wins.
                    let mut seen = HashSet::new();
                    let mut keys = Vec::new();
                    let mut values = Vec::new();
                    for op in ops[i..run_end].iter().rev() {
                        if let BatchOp::Put(k, v) = op {
                            if seen.insert(k.as_slice()) {
                                touched_revision |= k.as_slice() == REVISION;
                                keys.push(k.as_slice());
                                values.push(v.as_slice());
                            }
                        }
                    }
                    keys.reverse();
                    values.reverse();
                    let put = conn.statement(self, Sql::PutMany)?;
                    for (k, v) in keys.chunks(CHUNK).zip(values.chunks(CHUNK)) {
                        conn.client.execute(&put, &[&k, &v]).map_err(err)?;
                    }
                    i = run_end;
                }
                BatchOp::Delete(..) => {
                    let run_end =
                        ops[i..].iter().position(|o| !matches!(o, BatchOp::Delete(..))).map_or(ops.len(), |n| i + n);
                    let keys: Vec<&[u8]> = ops[i..run_end]
                        .iter()
                        .filter_map(|o| match o {
                            BatchOp::Delete(k) => Some(k.as_slice()),
                            _ => None,
                        })
                        .collect();
                    touched_revision |= keys.contains(&REVISION);
                    let delete = conn.statement(self, Sql::DeleteMany)?;
                    for k in keys.chunks(CHUNK) {
                        conn.client.execute(&delete, &[&k]).map_err(err)?;
                    }
                    i = run_end;
                }
                BatchOp::DeletePrefix(p) => {
                    touched_revision |= REVISION.starts_with(p);
                    match prefix_end(p) {
                        Some(end) => {
                            let st = conn.statement(self, Sql::DeleteRange)?;
                            conn.client.execute(&st, &[p, &end]).map_err(err)?
                        }
                        None => {
                            let st = conn.statement(self, Sql::DeleteFrom)?;
                            conn.client.execute(&st, &[p]).map_err(err)?
                        }
                    };
                    i += 1;
                }
            }
        }
        if touched_revision {
            // The revision outlives what the batch did to its row.
            let put = conn.statement(self, Sql::PutRevision)?;
            conn.client.execute(&put, &[&REVISION, &next_bytes.as_slice()]).map_err(err)?;
        }
        // Listeners hear of the commit when it commits (and not otherwise).
        let commit = format!(
            "SELECT pg_notify('{}', '{next}'); {}COMMIT",
            self.channel,
            if !flush && self.sync == SyncMode::Commit { "SET LOCAL synchronous_commit = off; " } else { "" }
        );
        conn.client.batch_execute(&commit).map_err(err)?;
        Ok(next)
    }

    fn commit_on(&self, mut conn: Conn, batch: &Batch, revision: u64, flush: bool) -> Result<u64> {
        let result = self.write(&mut conn, batch, revision, flush);
        match result {
            Ok(_) => self.give_back(conn),
            Err(_) => self.end(conn),
        }
        result
    }

    /// Runs `f` on a connection outside any transaction.
    fn with_conn<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let pooled = self.idle().pop();
        let mut conn = match pooled {
            Some(c) if !c.client.is_closed() => c,
            _ => self.connect()?,
        };
        let result = f(&mut conn);
        self.give_back(conn);
        result
    }
}

/// A `REPEATABLE READ` transaction on a pooled connection; rolled back (and
/// the connection pooled again) on drop.
struct PgView<'a> {
    pg: &'a PostgresBackend,
    conn: RefCell<Option<Conn>>,
    revision: u64,
}

impl Drop for PgView<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.get_mut().take() {
            self.pg.end(conn);
        }
    }
}

impl PgView<'_> {
    /// Runs `f` on the view's connection (borrowed only for `f`: a scan's
    /// visitor may read through the same view between pages).
    fn on_conn<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.borrow_mut();
        f(guard.as_mut().expect("live until dropped or committed"))
    }
}

impl Snapshot for PgView<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let pg = self.pg;
        self.on_conn(|conn| {
            let st = conn.statement(pg, Sql::Get)?;
            let row = conn.client.query_opt(&st, &[&key]).map_err(|e| pg.err("read", e))?;
            row.map(|r| r.try_get::<_, Vec<u8>>(0)).transpose().map_err(|e| pg.err("read", e))
        })
    }

    fn remote(&self) -> bool {
        true
    }

    /// One query for every key.
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let pg = self.pg;
        let rows = self.on_conn(|conn| {
            let st = conn.statement(pg, Sql::GetMany)?;
            conn.client.query(&st, &[&keys]).map_err(|e| pg.err("read", e))
        })?;
        let mut found = std::collections::HashMap::with_capacity(rows.len());
        for r in rows {
            let k: Vec<u8> = r.try_get(0).map_err(|e| pg.err("read", e))?;
            let v: Vec<u8> = r.try_get(1).map_err(|e| pg.err("read", e))?;
            found.insert(k, v);
        }
        Ok(keys.iter().map(|k| found.get(*k).cloned()).collect())
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        if end.is_some_and(|end| end <= start) {
            return Ok(());
        }
        let pg = self.pg;
        let err = |e| pg.err("scan", e);
        let (mut low, mut high) = (start.to_vec(), end.map(<[u8]>::to_vec));
        let mut limit = FIRST_PAGE;
        loop {
            let rows = self.on_conn(|conn| {
                let which = match (&high, reverse) {
                    (Some(_), false) => Sql::ScanTo,
                    (None, false) => Sql::ScanFrom,
                    (Some(_), true) => Sql::ScanToRev,
                    (None, true) => Sql::ScanFromRev,
                };
                let st = conn.statement(pg, which)?;
                match &high {
                    Some(high) => conn.client.query(&st, &[&low, high, &limit]),
                    None => conn.client.query(&st, &[&low, &limit]),
                }
                .map_err(err)
            })?;
            for row in &rows {
                let k: &[u8] = row.try_get(0).map_err(err)?;
                let v: &[u8] = row.try_get(1).map_err(err)?;
                if !visit(k, v)? {
                    return Ok(());
                }
            }
            let Some(last) = rows.last().filter(|_| rows.len() as i64 == limit) else { return Ok(()) };
            let last: &[u8] = last.try_get(0).map_err(err)?;
            if reverse {
                high = Some(last.to_vec());
            } else {
                // The smallest key after `last`.
                low = last.to_vec();
                low.push(0);
            }
            limit = (limit * 4).min(MAX_PAGE);
        }
    }
}

impl WriteView for PgView<'_> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let conn = self.conn.borrow_mut().take().expect("live until dropped or committed");
        self.pg.commit_on(conn, batch, self.revision, true)
    }
}

impl Backend for PostgresBackend {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let (conn, revision) = self.begin(true)?;
        Ok(Box::new(PgView { pg: self, conn: RefCell::new(Some(conn)), revision }))
    }

    /// One `SELECT` outside a transaction.
    fn revision(&self) -> Result<u64> {
        let (conn, revision) = self.read_revision(None)?;
        self.give_back(conn);
        Ok(revision)
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        let (conn, revision) = self.begin(false)?;
        self.commit_on(conn, batch, revision, true)
    }

    /// As `apply`, with `synchronous_commit=off` for this transaction.
    fn apply_unflushed(&self, batch: &Batch) -> Result<u64> {
        let (conn, revision) = self.begin(false)?;
        self.commit_on(conn, batch, revision, false)
    }

    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        let (conn, revision) = self.begin(false)?;
        Ok(Box::new(PgView { pg: self, conn: RefCell::new(Some(conn)), revision }))
    }

    fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    fn announces(&self) -> bool {
        true
    }

    /// A connection of its own that `LISTEN`s to the store's channel; every
    /// commit notifies it with its revision.
    fn announcements(&self) -> Result<Box<dyn Announcements>> {
        let mut conn = self.connect()?;
        conn.client.batch_execute(&format!("LISTEN {}", self.channel)).map_err(|e| self.err("listen", e))?;
        Ok(Box::new(PgAnnouncements { client: conn.client, place: self.place.clone() }))
    }

    fn leases(&self) -> bool {
        true
    }

    /// A session-level advisory lock on a connection of its own (see the
    /// `lease` module).
    fn lease(&self) -> Result<Box<dyn canopy_store::lease::Lease>> {
        self.take_lease()
    }

    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        self.held_leases(ids)
    }

    /// The table's size with its index and TOAST data.
    fn disk_size(&self) -> Result<u64> {
        self.with_conn(|conn| {
            let row = conn
                .client
                .query_one("SELECT pg_total_relation_size($1::text::regclass)", &[&self.table])
                .map_err(|e| self.err("size", e))?;
            Ok(row.get::<_, i64>(0).max(0) as u64)
        })
    }

    /// `VACUUM FULL` of the table: it is rewritten and its space returned.
    /// Waits for open snapshots of the store.
    fn compact(&self) -> Result<()> {
        self.with_conn(|conn| {
            conn.client.batch_execute(&format!("VACUUM FULL {}", self.table)).map_err(|e| self.err("compact", e))
        })
    }

    /// With `sync=off`, a flushed commit of a transaction id: the server's
    /// WAL is flushed up to it, and so past every earlier commit.
    fn flush(&self) -> Result<()> {
        self.with_conn(|conn| {
            conn.client
                .batch_execute("BEGIN; SET LOCAL synchronous_commit = on; SELECT txid_current(); COMMIT")
                .map_err(|e| self.err("flush", e))
        })
    }

    fn check(&self) -> Result<Vec<String>> {
        let snap = self.snapshot()?;
        let mut problems = Vec::new();
        match snap.get(REVISION)? {
            Some(v) if decode_revision(&v).is_some() => {}
            Some(_) => problems.push(format!("{}: the revision record is damaged", self.place)),
            None => problems.push(format!("{}: the revision record is missing", self.place)),
        }
        Ok(problems)
    }
}

/// The store's commits as `NOTIFY` delivers them to a listening connection.
struct PgAnnouncements {
    client: Client,
    place: String,
}

impl Announcements for PgAnnouncements {
    fn next(&mut self, timeout: Duration) -> Result<Option<u64>> {
        use postgres::fallible_iterator::FallibleIterator;
        let closed =
            || StoreError::new(ErrorKind::Unavailable, format!("{}: the listening connection closed", self.place));
        if self.client.is_closed() {
            return Err(closed());
        }
        let heard = {
            let mut notifications = self.client.notifications();
            let mut it = notifications.timeout_iter(timeout);
            it.next().map(|n| n.map(|n| n.payload().parse().unwrap_or(u64::MAX)))
        };
        match heard {
            Ok(Some(r)) => Ok(Some(r)),
            Ok(None) if self.client.is_closed() => Err(closed()),
            Ok(None) => Ok(None),
            Err(e) => Err(pg_err(&self.place, "listen", &e)),
        }
    }
}

/// FNV-1a: a stable 64-bit hash (channel names must not depend on the
/// process, as `std`'s hasher does).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_target(&StoreUrl::parse("postgres://me:p%40ss@db.example:6543/data?schema=s1").unwrap()).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str(), t.password.as_deref(), t.database.as_str(), t.schema.as_str()),
            ("db.example", 6543, "me", Some("p@ss"), "data", "s1")
        );
        let t = parse_target(&StoreUrl::parse("postgres://[::1]").unwrap()).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str(), t.database.as_str()),
            ("::1", 5432, "postgres", "postgres")
        );
        for bad in ["postgres://me:secret@h/db?schema=a-b", "postgres://me:secret@h/db?schema=1a", "postgres:///db"] {
            let e = parse_target(&StoreUrl::parse(bad).unwrap()).err().unwrap();
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{bad}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn hex_text() {
        assert_eq!(from_hex_text(&to_hex_text(b"\x00rev\xff")).unwrap(), b"\x00rev\xff");
        assert_eq!(from_hex_text("\\x0"), None);
        assert_eq!(from_hex_text("x00"), None);
    }
}
