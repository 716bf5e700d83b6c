//! canopy's SQLite backend: one table of fragments in a WAL-mode database file.
//!
//! The file holds one table, `kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT
//! ROWID`; SQLite compares blobs bytewise, so its order is canopy's key order.
//! The layout version (`keys::FORMAT`) is written with the table, and the
//! revision lives under `keys::REVISION` like in every backend.
//!
//! * One writer connection: every commit is one `BEGIN IMMEDIATE` transaction,
//!   which takes SQLite's write lock before the revision is read, so the
//!   revision check and the writes are atomic across processes.
//!   [`Backend::begin_write`] opens that transaction before the engine reads
//!   what it needs to build the batch, and commits the batch in it: reads and
//!   writes of a commit are one transaction, with no read transaction of its own.
//! * Statements are prepared once per connection (`prepare_cached`), the
//!   transaction statements included.
//! * Snapshots are read transactions on connections of a small pool: in WAL
//!   mode a reader sees the database as of its first read, whatever commits
//!   meanwhile, and never blocks the writer.
//! * `sync=commit` (default): `synchronous=FULL`, the log is flushed at every
//!   commit, so a batch is durable when `apply` returns.
//! * `sync=off`: `synchronous=NORMAL`, the log is written at every commit but
//!   flushed only at checkpoints, by [`Backend::flush`] and on close. A commit
//!   survives a crash of the process (it is in the operating system's cache);
//!   a crash of the machine may lose the most recent commits, never corrupt the
//!   file. (`synchronous=OFF` would not flush at checkpoints either, and a
//!   machine crash during a checkpoint could then corrupt the file, which the
//!   `SyncMode::Off` contract rules out.)

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use canopy_store::backend::{prefix_end, Backend, Batch, BatchOp, Snapshot, SyncMode, Visit, WriteView};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::files::FileMode;
use canopy_store::keys::{FORMAT, FORMAT_VERSION, REVISION};
use canopy_store::StoreUrl;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

/// How long a connection waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle reader connections kept for later snapshots.
const MAX_IDLE_READERS: usize = 8;

const CREATE: &str = "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID";
const GET: &str = "SELECT v FROM kv WHERE k = ?1";
const PUT: &str = "INSERT INTO kv(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v";
const DELETE: &str = "DELETE FROM kv WHERE k = ?1";
const DELETE_RANGE: &str = "DELETE FROM kv WHERE k >= ?1 AND k < ?2";
const DELETE_FROM: &str = "DELETE FROM kv WHERE k >= ?1";

/// The scan statement for a bounded or open range, in either direction.
fn scan_sql(bounded: bool, reverse: bool) -> &'static str {
    match (bounded, reverse) {
        (true, false) => "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k",
        (true, true) => "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k DESC",
        (false, false) => "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k",
        (false, true) => "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k DESC",
    }
}

/// A SQLite store in one database file (plus SQLite's `-wal` and `-shm` files).
pub struct SqliteBackend {
    path: PathBuf,
    sync: SyncMode,
    writer: Mutex<Connection>,
    idle_readers: Mutex<Vec<Connection>>,
}

fn poisoned() -> StoreError {
    StoreError::new(ErrorKind::Unavailable, "sqlite store lock poisoned by a panic")
}

fn sqlite_err(path: &Path, what: &str, e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::DiskFull) {
        // SQLite rolled the transaction back: nothing of it was stored.
        const ENOSPC: i32 = 28;
        return StoreError::no_space(&format!("sqlite store {}: {what}", path.display()), Some(ENOSPC))
            .expect("ENOSPC is a full disk");
    }
    let kind = match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => ErrorKind::Corrupted,
        Some(
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::PermissionDenied
            | ErrorCode::ReadOnly,
        ) => ErrorKind::Unavailable,
        Some(ErrorCode::TooBig) => ErrorKind::Unsupported,
        _ => match e {
            rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::InvalidColumnType(..) => {
                ErrorKind::Corrupted
            }
            _ => ErrorKind::Io,
        },
    };
    let hint = match kind {
        ErrorKind::Corrupted => " (the file is damaged or is not a canopy store)",
        _ => "",
    };
    StoreError::new(kind, format!("sqlite store {}: {what}: {e}{hint}", path.display()))
}

/// `path` with `suffix` appended to its file name (`store.db` → `store.db-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Refuses a file that is not a SQLite database, or one shorter than the pages
/// its header counts (a truncated copy). See <https://sqlite.org/fileformat.html>:
/// the page count at offset 28 is valid when the counter at 92 equals the one at 24.
/// A file with a non-empty log is not checked: its pages may still be in the log.
fn check_file(path: &Path) -> Result<()> {
    let ctx = || format!("sqlite store {}", path.display());
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(ctx(), e)),
    };
    let len = file.metadata().map_err(|e| StoreError::io(ctx(), e))?.len();
    if len == 0 {
        return Ok(());
    }
    let mut header = [0u8; 100];
    if file.read_exact(&mut header).is_err() || &header[..16] != b"SQLite format 3\0" {
        return Err(StoreError::corrupted(format!("{}: the file is not a SQLite database", ctx())));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes(header[28..32].try_into().expect("4 bytes")));
    let counted = header[24..28] == header[92..96];
    let log_len = fs::metadata(sibling(path, "-wal")).map(|m| m.len()).unwrap_or(0);
    if counted && log_len == 0 && pages * page_size > len {
        return Err(StoreError::corrupted(format!(
            "{}: the file is truncated ({len} bytes, its header counts {pages} pages of {page_size})",
            ctx()
        )));
    }
    Ok(())
}

fn read_revision(conn: &Connection) -> rusqlite::Result<std::result::Result<u64, Vec<u8>>> {
    let v: Option<Vec<u8>> = conn.prepare_cached(GET)?.query_row([REVISION], |r| r.get(0)).optional()?;
    Ok(match v {
        None => Ok(0),
        Some(b) => b.as_slice().try_into().map(u64::from_be_bytes).map_err(|_| b),
    })
}

impl SqliteBackend {
    /// Opens the store a URL names (`sqlite:FILE?sync=commit|off&mode=0600`).
    ///
    /// # Errors
    /// `InvalidUrl` for unknown parameters; see [`SqliteBackend::open`].
    pub fn open_url(url: &StoreUrl) -> Result<SqliteBackend> {
        url.check_params(&["sync", "mode"])?;
        SqliteBackend::open_with_mode(Path::new(&url.location), url.sync_mode()?, url.file_mode()?)
    }

    /// Opens or creates the store in database file `path` (creating its
    /// directory), new files `0600`.
    ///
    /// # Errors
    /// As [`SqliteBackend::open_with_mode`].
    pub fn open(path: &Path, sync: SyncMode) -> Result<SqliteBackend> {
        SqliteBackend::open_with_mode(path, sync, FileMode::default())
    }

    /// Opens or creates the store in database file `path`, creating missing
    /// directories and the file with `mode` (SQLite gives its `-wal` and
    /// `-shm` files the database file's permissions).
    ///
    /// # Errors
    /// `Corrupted` for a file that is not SQLite, is truncated, or is the database
    /// of another program; `Unavailable` when the file cannot be opened or stays
    /// locked by another process; `Unsupported` when WAL mode is not available.
    pub fn open_with_mode(path: &Path, sync: SyncMode, file_mode: FileMode) -> Result<SqliteBackend> {
        let ctx = || format!("sqlite store {}", path.display());
        if path.is_dir() {
            return Err(StoreError::new(ErrorKind::Unavailable, format!("{}: is a directory", ctx())));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            file_mode.create_dir_all(parent).map_err(|e| StoreError::io(ctx(), e))?;
        }
        check_file(path)?;
        file_mode.precreate(path).map_err(|e| StoreError::io(ctx(), e))?;
        let mut writer = connect(path, OpenFlags::SQLITE_OPEN_CREATE)?;
        init_table(&mut writer).map_err(|e| match e {
            Init::Sql(e) => sqlite_err(path, "open", e),
            Init::Foreign(why) => StoreError::corrupted(format!("{}: not a canopy store ({why})", ctx())),
        })?;
        // Switching a new database to WAL takes an exclusive lock that SQLite's
        // busy handler does not wait for: several processes opening it at once
        // retry until the first has switched it.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mode: String = loop {
            match writer.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
                Err(e)
                    if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(2))
                }
                other => break other.map_err(|e| sqlite_err(path, "enable WAL mode", e))?,
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                format!("{}: WAL mode is not available here (journal mode `{mode}`)", ctx()),
            ));
        }
        let synchronous = match sync {
            SyncMode::Commit => "FULL",
            SyncMode::Off => "NORMAL",
        };
        writer.pragma_update(None, "synchronous", synchronous).map_err(|e| sqlite_err(path, "open", e))?;
        Ok(SqliteBackend {
            path: path.to_path_buf(),
            sync,
            writer: Mutex::new(writer),
            idle_readers: Mutex::new(Vec::new()),
        })
    }

    fn err(&self, what: &str, e: rusqlite::Error) -> StoreError {
        sqlite_err(&self.path, what, e)
    }

    fn writer(&self) -> Result<MutexGuard<'_, Connection>> {
        self.writer.lock().map_err(|_| poisoned())
    }

    /// An idle reader connection, or a new one.
    fn reader(&self) -> Result<Connection> {
        if let Some(conn) = self.idle_readers.lock().map_err(|_| poisoned())?.pop() {
            return Ok(conn);
        }
        connect(&self.path, OpenFlags::empty())
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle_readers.lock() {
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
        }
    }

    /// Writes `batch`'s operations and the next revision in the open
    /// transaction of `conn`, which read `revision`.
    fn write_ops(&self, conn: &Connection, batch: &Batch, revision: u64) -> Result<u64> {
        let err = |e| self.err("commit", e);
        if batch.expect_revision.is_some_and(|expect| expect != revision) {
            return Err(StoreError::new(
                ErrorKind::Conflict,
                format!("sqlite store {}: another writer committed first", self.path.display()),
            ));
        }
        let mut put = conn.prepare_cached(PUT).map_err(err)?;
        let mut delete = conn.prepare_cached(DELETE).map_err(err)?;
        for op in &batch.ops {
            match op {
                BatchOp::Put(k, v) => put.execute(params![k, v]),
                BatchOp::Delete(k) => delete.execute([k]),
                BatchOp::DeletePrefix(p) => match prefix_end(p) {
                    Some(end) => conn.prepare_cached(DELETE_RANGE).and_then(|mut s| s.execute(params![p, end])),
                    None => conn.prepare_cached(DELETE_FROM).and_then(|mut s| s.execute([p])),
                },
            }
            .map_err(err)?;
        }
        put.execute(params![REVISION, (revision + 1).to_be_bytes()]).map_err(err)?;
        Ok(revision + 1)
    }

    fn damaged_revision(&self) -> StoreError {
        StoreError::corrupted(format!("sqlite store {}: the revision record is damaged", self.path.display()))
    }
}

/// Why a database cannot hold a canopy store.
enum Init {
    Sql(rusqlite::Error),
    /// The database belongs to another program.
    Foreign(String),
}

impl From<rusqlite::Error> for Init {
    fn from(e: rusqlite::Error) -> Init {
        Init::Sql(e)
    }
}

/// Creates the table (and the format record) in an empty database; accepts a
/// database that has it; refuses one with other tables.
fn init_table(conn: &mut Connection) -> std::result::Result<(), Init> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let tables: Vec<String> = tx
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if tables.iter().any(|t| t == "kv") {
        let columns: Vec<String> = tx
            .prepare("SELECT name FROM pragma_table_info('kv') ORDER BY cid")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if columns != ["k", "v"] {
            return Err(Init::Foreign(format!("its table kv has columns {}", columns.join(", "))));
        }
        return Ok(());
    }
    if !tables.is_empty() {
        return Err(Init::Foreign(format!("it has tables {} and no table kv", tables.join(", "))));
    }
    tx.execute(CREATE, [])?;
    tx.execute(PUT, params![FORMAT, FORMAT_VERSION.to_be_bytes()])?;
    tx.commit()?;
    Ok(())
}

/// A connection with the settings every connection needs.
fn connect(path: &Path, extra: OpenFlags) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | extra;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sqlite_err(path, "open", e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sqlite_err(path, "open", e))?;
    Ok(conn)
}

/// A read transaction on a pooled connection; ends (and returns the connection
/// to the pool) on drop.
struct SqliteSnapshot<'a> {
    backend: &'a SqliteBackend,
    conn: Option<Connection>,
    revision: u64,
}

impl SqliteSnapshot<'_> {
    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("live until dropped")
    }
}

impl Drop for SqliteSnapshot<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A connection whose transaction cannot end is not reused.
            if exec(&conn, "COMMIT").is_ok() {
                self.backend.give_back(conn);
            }
        }
    }
}

impl Snapshot for SqliteSnapshot<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        get(self.backend, self.conn(), key)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        scan(self.backend, self.conn(), start, end, reverse, visit)
    }
}

fn get(backend: &SqliteBackend, conn: &Connection, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let err = |e| backend.err("read", e);
    let mut st = conn.prepare_cached(GET).map_err(err)?;
    st.query_row([key], |r| r.get(0)).optional().map_err(err)
}

fn scan(
    backend: &SqliteBackend,
    conn: &Connection,
    start: &[u8],
    end: Option<&[u8]>,
    reverse: bool,
    visit: &mut Visit<'_>,
) -> Result<()> {
    let err = |e| backend.err("scan", e);
    let mut st = conn.prepare_cached(scan_sql(end.is_some(), reverse)).map_err(err)?;
    let mut rows = match end {
        Some(end) => st.query(params![start, end]),
        None => st.query([start]),
    }
    .map_err(err)?;
    while let Some(row) = rows.next().map_err(err)? {
        let k = row.get_ref(0).and_then(|v| Ok(v.as_blob()?)).map_err(err)?;
        let v = row.get_ref(1).and_then(|v| Ok(v.as_blob()?)).map_err(err)?;
        if !visit(k, v)? {
            break;
        }
    }
    Ok(())
}

/// Runs a statement without parameters or rows, prepared once per connection.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// The write transaction of [`Backend::begin_write`], open on the writer
/// connection (whose lock it holds) until committed or dropped.
struct SqliteWrite<'a> {
    backend: &'a SqliteBackend,
    conn: MutexGuard<'a, Connection>,
    revision: u64,
}

impl Drop for SqliteWrite<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit() {
            // Not committed (or the commit failed): nothing of it stays. A
            // rollback that fails leaves SQLite to roll back at the next open.
            let _ = exec(&self.conn, "ROLLBACK");
        }
    }
}

impl Snapshot for SqliteWrite<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        get(self.backend, &self.conn, key)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        scan(self.backend, &self.conn, start, end, reverse, visit)
    }
}

impl WriteView for SqliteWrite<'_> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let revision = self.backend.write_ops(&self.conn, batch, self.revision)?;
        exec(&self.conn, "COMMIT").map_err(|e| self.backend.err("commit", e))?;
        Ok(revision)
    }
}

impl Backend for SqliteBackend {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let conn = self.reader()?;
        // The snapshot is pinned by the first read of the transaction: the revision.
        let begun = exec(&conn, "BEGIN");
        let revision = begun.and_then(|_| read_revision(&conn)).map_err(|e| self.err("begin a read", e));
        let mut snap = SqliteSnapshot { backend: self, conn: Some(conn), revision: 0 };
        snap.revision = revision?.map_err(|_| self.damaged_revision())?;
        Ok(Box::new(snap))
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        self.begin_write()?.commit(batch)
    }

    /// With `sync=commit`, the transaction runs at `synchronous=NORMAL` (the
    /// log is written, flushed at the next checkpoint or flushed commit;
    /// never a damaged file), on the writer connection held throughout, so
    /// no other commit runs at that setting.
    fn apply_unflushed(&self, batch: &Batch) -> Result<u64> {
        if self.sync == SyncMode::Off {
            return self.apply(batch);
        }
        let conn = self.writer()?;
        exec(&conn, "PRAGMA synchronous=NORMAL").map_err(|e| self.err("write", e))?;
        let result = exec(&conn, "BEGIN IMMEDIATE").map_err(|e| self.err("begin a write", e)).and_then(|()| {
            let revision =
                read_revision(&conn).map_err(|e| self.err("begin a write", e))?.map_err(|_| self.damaged_revision())?;
            let revision = self.write_ops(&conn, batch, revision)?;
            exec(&conn, "COMMIT").map_err(|e| self.err("commit", e))?;
            Ok(revision)
        });
        if result.is_err() && !conn.is_autocommit() {
            let _ = exec(&conn, "ROLLBACK");
        }
        exec(&conn, "PRAGMA synchronous=FULL").map_err(|e| self.err("write", e))?;
        result
    }

    /// One `BEGIN IMMEDIATE` transaction on the writer connection: the view
    /// reads inside it and the commit writes inside it, so no other writer
    /// can come between (they wait, up to the busy timeout).
    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        let conn = self.writer()?;
        exec(&conn, "BEGIN IMMEDIATE").map_err(|e| self.err("begin a write", e))?;
        // From here on, dropping the view rolls the transaction back.
        let mut view = SqliteWrite { backend: self, conn, revision: 0 };
        view.revision = read_revision(&view.conn)
            .map_err(|e| self.err("begin a write", e))?
            .map_err(|_| self.damaged_revision())?;
        Ok(Box::new(view))
    }

    fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    fn disk_size(&self) -> Result<u64> {
        let mut total = 0;
        for file in [self.path.clone(), sibling(&self.path, "-wal")] {
            match fs::metadata(&file) {
                Ok(m) => total += m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io(format!("sqlite store {}", self.path.display()), e)),
            }
        }
        Ok(total)
    }

    /// Checkpoints the log into the database, rebuilds it (`VACUUM`), and
    /// checkpoints again so that the log shrinks too. A snapshot open meanwhile
    /// only keeps the log from shrinking.
    fn compact(&self) -> Result<()> {
        let conn = self.writer()?;
        let checkpoint =
            |what| conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(|e| self.err(what, e));
        checkpoint("compact: checkpoint")?;
        conn.execute_batch("VACUUM").map_err(|e| self.err("compact", e))?;
        checkpoint("compact: checkpoint")
    }

    /// SQLite's `PRAGMA integrity_check` (every page, index and record), and the
    /// file's length against its header.
    fn check(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        if let Err(e) = check_file(&self.path) {
            problems.push(e.to_string());
        }
        let conn = self.reader()?;
        let messages: rusqlite::Result<Vec<String>> =
            conn.prepare("PRAGMA integrity_check").and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
        match messages.map_err(|e| self.err("check", e)) {
            Ok(messages) if messages == ["ok"] => self.give_back(conn),
            Ok(messages) => {
                problems.extend(messages.into_iter().map(|m| format!("sqlite store {}: {m}", self.path.display())))
            }
            // Damage severe enough to stop SQLite's own check is what the check reports.
            Err(e) if e.kind() == ErrorKind::Corrupted => problems.push(e.to_string()),
            Err(e) => return Err(e),
        }
        Ok(problems)
    }

    /// Checkpoints what it can without waiting for readers (which syncs the log,
    /// then the database), then syncs the log itself: commits a reader kept from
    /// the checkpoint are durable too.
    fn flush(&self) -> Result<()> {
        let conn = self.writer()?;
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())).map_err(|e| self.err("flush", e))?;
        let log = sibling(&self.path, "-wal");
        match fs::File::open(&log).and_then(|f| f.sync_all()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(StoreError::io(format!("sqlite store {}: flush the log", self.path.display()), e))
            }
            _ => Ok(()),
        }
    }
}
