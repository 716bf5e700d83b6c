//! canopy's whole-file backends: the whole store lives in memory as an ordered
//! map and is rewritten to one file on every commit.
//!
//! * `snapshot:PATH` — canopy's compact binary format ([`snapshot`],
//!   `docs/formats/snapshot.md`).
//! * `json:PATH` — the whole store as one RFC 7951 JSON file people can read
//!   ([`json`], `docs/formats/json-store.md`).
//!
//! Shared by every format (this module):
//! * Snapshots are `Arc` clones of the map, as in the memory backend; a commit
//!   changes the map in place unless a snapshot still holds it.
//! * [`Backend::apply`] writes the new state to `PATH.tmp` in the same
//!   directory and renames it over `PATH`, so a crash leaves the old file or
//!   the new one, never part of one. With `sync=commit` (default) the
//!   temporary file is flushed before the rename and the directory after it:
//!   the commit is durable when `apply` returns. With `sync=off` nothing is
//!   flushed: a commit survives a crash of the process; a crash of the machine
//!   may lose recent commits, and on a file system that does not order the
//!   rename after the data it may leave a truncated file, which is refused at
//!   open (never loaded half).
//! * Several processes share a store as sysrepo's JSON files are shared. A
//!   commit takes an exclusive `flock` on `PATH.lock` for as long as it writes,
//!   waiting for another process's commit up to `lock_timeout` (default 5 s,
//!   `?lock_timeout=250ms`), then works on the current file: when another
//!   process replaced it since this one read it, it is read again first, and a
//!   batch built on an older revision is refused with `Conflict` (the engine
//!   rebuilds it). Readers take no lock: they never wait for a writer, which
//!   prepares its new state beside the one they read and renames it in.
//!   A snapshot first checks, without reading the file, whether another
//!   process replaced it (the file's identity and the revision the last writer
//!   left in `PATH.lock`) and reloads it then.
//! * Handles opened in one process on one path share one state.
//! * Files are created `0600` and directories `0700` unless the URL gives a
//!   `mode` (`?mode=0640`).
//! * The revision is stored in the file, not as a key of the map.

pub mod json;
pub mod snapshot;

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::{Duration, Instant};

use canopy_store::backend::{Backend, Batch, BatchOp, Snapshot, SyncMode, Visit, WriteView};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::files::FileMode;
use canopy_store::memory::MapSnapshot;
use canopy_store::StoreUrl;

/// The whole store: keys in order.
pub type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// A file format: how the whole map and its revision become one file.
pub trait Format: Send + Sync {
    /// The URL scheme and backend kind (`snapshot`).
    fn name(&self) -> &'static str;

    /// The file holding `map` at `revision`.
    ///
    /// # Errors
    /// `Unsupported` for data the format cannot hold.
    fn encode(&self, map: &Map, revision: u64) -> Result<Vec<u8>>;

    /// The map and revision a file holds.
    ///
    /// # Errors
    /// `Corrupted` for a damaged or foreign file, `Unsupported` for a newer
    /// format version; the message says what is wrong and where.
    fn decode(&self, bytes: &[u8]) -> Result<(Map, u64)>;
}

/// A whole-file store. Cheap to open twice in one process: handles on one
/// path share their state.
pub struct FileBackend {
    shared: Arc<Shared>,
}

/// How long a commit waits for another process's lock unless the URL says.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

struct State {
    map: Arc<Map>,
    revision: u64,
    /// What the file looked like when `map` was read from it or written to it.
    seen: Seen,
}

/// Enough about the store file to tell, without reading it, whether another
/// process replaced it: the file's identity (a new file is renamed in at
/// every commit) and the revision the last writer left in the lock file
/// (which also catches an inode number reused within one timestamp tick).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Seen {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    lock_revision: u64,
}

impl Seen {
    fn of(m: &fs::Metadata, lock_revision: u64) -> Seen {
        Seen {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            lock_revision,
        }
    }
}

/// The state of one store file, shared by every handle in the process.
struct Shared {
    path: PathBuf,
    format: &'static dyn Format,
    sync: SyncMode,
    mode: FileMode,
    lock_timeout: Duration,
    /// Readers clone the map's `Arc` under the read lock, held only for that;
    /// a commit swaps in its new map once the file holds it.
    state: RwLock<State>,
    /// One commit (or reload) of this process at a time; taken before the
    /// file lock, and before `state`.
    writer: Mutex<()>,
    /// `PATH.lock`: the `flock` every process's commit holds while it writes,
    /// and the revision (8 bytes, big-endian) its last commit left.
    lock: fs::File,
}
/// Stores open in this process, by canonical path.
static OPEN: Mutex<Vec<(PathBuf, Weak<Shared>)>> = Mutex::new(Vec::new());

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn poisoned() -> StoreError {
    StoreError::new(ErrorKind::Unavailable, "file store lock poisoned by a panic")
}

impl FileBackend {
    /// Opens the store a URL names:
    /// `snapshot:PATH?sync=commit|off&lock_timeout=5s&mode=0600` or the same
    /// with `json:`.
    ///
    /// # Errors
    /// `InvalidUrl` for an unknown scheme or parameter; see [`FileBackend::open`].
    pub fn open_url(url: &StoreUrl) -> Result<FileBackend> {
        url.check_params(&["sync", "lock_timeout", "mode"])?;
        let format: &'static dyn Format = match url.scheme.as_deref() {
            Some("snapshot") => &snapshot::SnapshotFormat,
            Some("json") => &json::JsonFormat,
            other => {
                return Err(StoreError::new(
                    ErrorKind::InvalidUrl,
                    format!("invalid store URL `{}`: not a file backend ({other:?})", url.as_str()),
                ))
            }
        };
        let options = Options {
            sync: url.sync_mode()?,
            lock_timeout: url.lock_timeout(DEFAULT_LOCK_TIMEOUT)?,
            mode: url.file_mode()?,
        };
        FileBackend::open_with(Path::new(&url.location), format, options)
    }

    /// Opens the store in file `path` with the default lock timeout and mode.
    ///
    /// # Errors
    /// As [`FileBackend::open_with`].
    pub fn open(path: &Path, format: &'static dyn Format, sync: SyncMode) -> Result<FileBackend> {
        FileBackend::open_with(path, format, Options { sync, ..Options::default() })
    }

    /// Opens the store in file `path`, creating it (and its directory) when absent.
    ///
    /// # Errors
    /// `Unavailable` when `path` is a directory, when this process has it open
    /// in another format or sync mode, or when another process holds its lock
    /// longer than the lock timeout while it is created; the format's
    /// `Corrupted` / `Unsupported` for a file it refuses; I/O errors.
    pub fn open_with(path: &Path, format: &'static dyn Format, options: Options) -> Result<FileBackend> {
        let Options { sync, lock_timeout, mode } = options;
        let ctx = || format!("{} store {}", format.name(), path.display());
        if path.is_dir() {
            return Err(StoreError::new(ErrorKind::Unavailable, format!("{}: is a directory", ctx())));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            mode.create_dir_all(parent).map_err(|e| StoreError::io(ctx(), e))?;
        }
        let lock_path = sibling(path, ".lock");
        let canonical = fs::canonicalize(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
            .map_err(|e| StoreError::io(ctx(), e))?
            .join(path.file_name().unwrap_or_default());
        let mut open = OPEN.lock().map_err(|_| poisoned())?;
        open.retain(|(_, w)| w.strong_count() > 0);
        if let Some(shared) = open.iter().find(|(p, _)| *p == canonical).and_then(|(_, w)| w.upgrade()) {
            if shared.format.name() != format.name() || shared.sync != sync {
                return Err(StoreError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "{}: already open in this process as `{}` with sync={:?}",
                        ctx(),
                        shared.format.name(),
                        shared.sync
                    ),
                ));
            }
            return Ok(FileBackend { shared });
        }
        let lock = mode
            .options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StoreError::io(format!("{}: lock file", ctx()), e))?;
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            format,
            sync,
            mode,
            lock_timeout,
            state: RwLock::new(State { map: Arc::new(Map::new()), revision: 0, seen: Seen::default() }),
            writer: Mutex::new(()),
            lock,
        });
        {
            let _writer = shared.writer.lock().map_err(|_| poisoned())?;
            // A temporary file is left only by a commit that did not finish;
            // removed when no other process is writing one (the next commit
            // replaces it anyway).
            if let Ok(()) = shared.lock.try_lock() {
                let _ = fs::remove_file(shared.tmp_path());
                let _ = shared.lock.unlock();
            }
            // Reading takes no lock: files are only ever replaced whole.
            if !shared.reload(true)? {
                let _flock = shared.flock()?;
                // Another process may have created it meanwhile.
                if !shared.reload(true)? {
                    if let (Written::Unflushed(e), _) = shared.write_file(&Map::new(), 0)? {
                        return Err(StoreError::io(format!("{}: flush the directory", ctx()), e));
                    }
                    // The state is what the file holds, as every other
                    // process reads it (a format may keep records of its
                    // own, as JSON's layout version).
                    shared.reload(true)?;
                }
            }
        }
        open.push((canonical, Arc::downgrade(&shared)));
        Ok(FileBackend { shared })
    }
}

/// How a whole-file store is opened (the URL's parameters).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub sync: SyncMode,
    /// How long a commit waits for another process's lock.
    pub lock_timeout: Duration,
    /// The permissions of the files (and directories) the store creates.
    pub mode: FileMode,
}

impl Default for Options {
    fn default() -> Options {
        Options { sync: SyncMode::Commit, lock_timeout: DEFAULT_LOCK_TIMEOUT, mode: FileMode::default() }
    }
}

/// Holds `PATH.lock` exclusively; unlocks when dropped.
struct FileLock<'a>(&'a fs::File);

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl Shared {
    fn tmp_path(&self) -> PathBuf {
        sibling(&self.path, ".tmp")
    }

    /// `e` with the store named in front of its message.
    fn context(&self, e: StoreError) -> StoreError {
        StoreError::new(e.kind(), format!("{} store {}: {e}", self.format.name(), self.path.display()))
    }

    /// Takes the file lock, waiting for another process's commit up to the
    /// lock timeout.
    fn flock(&self) -> Result<FileLock<'_>> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(200);
        loop {
            match self.lock.try_lock() {
                Ok(()) => return Ok(FileLock(&self.lock)),
                Err(fs::TryLockError::WouldBlock) => {}
                Err(fs::TryLockError::Error(e)) => {
                    return Err(
                        self.context(StoreError::io(format!("lock {}", sibling(&self.path, ".lock").display()), e))
                    )
                }
            }
            let waited = start.elapsed();
            if waited >= self.lock_timeout {
                return Err(StoreError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "{} store {}: another process held its lock ({}) for {} ms, longer than lock_timeout={} ms \
                         (raise it with ?lock_timeout=10s)",
                        self.format.name(),
                        self.path.display(),
                        sibling(&self.path, ".lock").display(),
                        waited.as_millis(),
                        self.lock_timeout.as_millis()
                    ),
                ));
            }
            std::thread::sleep(pause.min(self.lock_timeout - waited));
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }

    /// The revision the last writer left in the lock file (0 when none has).
    fn lock_revision(&self) -> u64 {
        let mut b = [0u8; 8];
        match self.lock.read_at(&mut b, 0) {
            Ok(8) => u64::from_be_bytes(b),
            _ => 0,
        }
    }

    /// What the store file looks like now; `None` when it does not exist.
    fn look(&self) -> Result<Option<Seen>> {
        match fs::metadata(&self.path) {
            Ok(m) => Ok(Some(Seen::of(&m, self.lock_revision()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.context(StoreError::io("stat", e))),
        }
    }

    /// Reads the file again if another process replaced it since this one
    /// read or wrote it (`force`: in any case); `false` when there is no file.
    /// The caller holds `writer`.
    fn reload(&self, force: bool) -> Result<bool> {
        let Some((f, seen)) = self.open_current()? else { return Ok(false) };
        if !force && self.state.read().map_err(|_| poisoned())?.seen == seen {
            return Ok(true);
        }
        let bytes = self.read_all(f, &seen)?;
        let (map, revision) = self.format.decode(&bytes).map_err(|e| self.context(e))?;
        *self.state.write().map_err(|_| poisoned())? = State { map: Arc::new(map), revision, seen };
        Ok(true)
    }

    /// The store file as it is now, with the identity of the file actually
    /// opened (it may be replaced meanwhile); `None` when there is none.
    fn open_current(&self) -> Result<Option<(fs::File, Seen)>> {
        let lock_revision = self.lock_revision();
        let f = match fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.context(StoreError::io("open", e))),
        };
        let seen = Seen::of(&f.metadata().map_err(|e| self.context(StoreError::io("read", e)))?, lock_revision);
        Ok(Some((f, seen)))
    }

    fn read_all(&self, mut f: fs::File, seen: &Seen) -> Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(usize::try_from(seen.size).unwrap_or(0));
        f.read_to_end(&mut bytes).map_err(|e| self.context(StoreError::io("read", e)))?;
        Ok(bytes)
    }

    /// Reloads when another process replaced the file: the check costs a
    /// `stat` and an 8-byte read. While a commit of this process is under
    /// way (it reloads itself), the state as it is is read.
    fn refresh(&self) -> Result<()> {
        let now = self.look()?;
        if now == Some(self.state.read().map_err(|_| poisoned())?.seen) {
            return Ok(());
        }
        match self.writer.try_lock() {
            Ok(_writer) => self.reload(false).map(|_| ()),
            Err(std::sync::TryLockError::WouldBlock) => Ok(()),
            Err(std::sync::TryLockError::Poisoned(_)) => Err(poisoned()),
        }
    }

    /// Replaces the file atomically by one holding `map` at `revision`, and
    /// leaves the revision in the lock file. [`Written::Unflushed`] when the
    /// file was replaced but the directory could not be flushed: the new
    /// state is the file's. The caller holds the file lock.
    fn write_file(&self, map: &Map, revision: u64) -> Result<(Written, Seen)> {
        let bytes = self.format.encode(map, revision).map_err(|e| self.context(e))?;
        let tmp = self.tmp_path();
        let io =
            |what: &str, e| StoreError::io(format!("{} store {}: {what}", self.format.name(), self.path.display()), e);
        let written = (|| {
            let mut f = self.mode.options().write(true).create(true).truncate(true).open(&tmp)?;
            self.mode.fix(&f)?;
            f.write_all(&bytes)?;
            if self.sync == SyncMode::Commit {
                f.sync_all()?;
            }
            f.metadata()
        })();
        let meta = match written {
            Ok(m) => m,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(io("write the new file", e));
            }
        };
        fs::rename(&tmp, &self.path).map_err(|e| io("replace the file", e))?;
        // Readers in other processes that see the new file reload it anyway;
        // this catches a new file that looks like the old one.
        let _ = self.lock.write_at(&revision.to_be_bytes(), 0);
        let seen = Seen::of(&meta, revision);
        if self.sync == SyncMode::Commit {
            if let Err(e) = self.sync_dir() {
                return Ok((Written::Unflushed(e), seen));
            }
        }
        Ok((Written::Durable, seen))
    }

    fn sync_dir(&self) -> std::io::Result<()> {
        #[cfg(test)]
        if tests::FAIL_DIR_SYNC.with(std::cell::Cell::get) {
            return Err(std::io::Error::other("injected failure"));
        }
        let dir = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        fs::File::open(dir)?.sync_all()
    }

    /// Commits `batch`: under this process's writer mutex and the file lock,
    /// on the file as it is now. Readers keep the old map until the new file
    /// is in place.
    fn apply(&self, batch: &Batch) -> Result<u64> {
        let _writer = self.writer.lock().map_err(|_| poisoned())?;
        let _flock = self.flock()?;
        self.reload(false)?;
        self.commit_locked(&batch.ops, batch.expect_revision)
    }

    /// [`Shared::apply`] once the caller holds `writer` and the file lock and
    /// has reloaded the file.
    fn commit_locked(&self, ops: &[BatchOp], expect_revision: Option<u64>) -> Result<u64> {
        let (base, current) = {
            let state = self.state.read().map_err(|_| poisoned())?;
            (state.map.clone(), state.revision)
        };
        if let Some(expect) = expect_revision {
            if expect != current {
                return Err(StoreError::new(
                    ErrorKind::Conflict,
                    format!(
                        "{} store {}: the store changed (revision {current}, expected {expect})",
                        self.format.name(),
                        self.path.display(),
                    ),
                ));
            }
        }
        let revision = current + 1;
        // The readers hold `base`: the new state is built beside it.
        let mut map = Map::clone(&base);
        drop(base);
        apply_ops(&mut map, ops);
        let (written, seen) = self.write_file(&map, revision)?;
        let old = std::mem::replace(
            &mut *self.state.write().map_err(|_| poisoned())?,
            State { map: Arc::new(map), revision, seen },
        );
        // Freed outside the lock.
        drop(old);
        match written {
            Written::Durable => Ok(revision),
            // The file holds the new state: so does the store in memory, or
            // a "failed" commit would come back at the next open.
            Written::Unflushed(e) => Err(StoreError::io(
                format!(
                    "{} store {}: committed revision {revision} (the file holds it), but flushing its directory \
                     failed, so the commit may not survive a machine crash",
                    self.format.name(),
                    self.path.display()
                ),
                e,
            )),
        }
    }
}

/// How far [`Shared::write_file`] got.
enum Written {
    /// Replaced, and flushed as the sync mode asks.
    Durable,
    /// Replaced (the new state is the file's), but flushing the directory failed.
    Unflushed(std::io::Error),
}

/// The first key at which two maps differ (present in one only, or with
/// other values).
fn first_difference(a: &Map, b: &Map) -> Option<Vec<u8>> {
    let mut ia = a.iter();
    let mut ib = b.iter();
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => return None,
            (Some((k, _)), None) | (None, Some((k, _))) => return Some(k.clone()),
            (Some((ka, va)), Some((kb, vb))) if ka != kb || va != vb => return Some(ka.min(kb).clone()),
            _ => {}
        }
    }
}

/// A record's key for messages: the datastore and path of a fragment, else hex.
fn describe_record(k: &[u8]) -> String {
    use canopy_store::keys::{self, Datastore};
    match (k.first(), k.get(1).and_then(|&c| Datastore::from_code(c))) {
        (Some(0x10), Some(ds)) => format!("{} {}", ds.name(), canopy_store::treeio::describe_key(&k[2..])),
        (Some(0x20), Some(ds)) => format!("{} order index {}", ds.name(), keys::hex(&k[2..])),
        _ => keys::hex(k),
    }
}

fn apply_ops(map: &mut Map, ops: &[BatchOp]) {
    for op in ops {
        match op {
            BatchOp::Put(k, v) => {
                map.insert(k.clone(), v.clone());
            }
            BatchOp::Delete(k) => {
                map.remove(k);
            }
            BatchOp::DeletePrefix(p) => {
                let removed: Vec<Vec<u8>> =
                    map.range(p.clone()..).take_while(|(k, _)| k.starts_with(p)).map(|(k, _)| k.clone()).collect();
                for k in removed {
                    map.remove(&k);
                }
            }
        }
    }
}

impl Backend for FileBackend {
    fn kind(&self) -> &'static str {
        self.shared.format.name()
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.shared.refresh()?;
        let state = self.shared.state.read().map_err(|_| poisoned())?;
        Ok(Box::new(MapSnapshot { map: state.map.clone(), revision: state.revision }))
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        self.shared.apply(batch)
    }

    /// Takes the file lock (waiting up to the lock timeout) for the whole
    /// transaction, as sysrepo's JSON files are locked: the view reads the
    /// current file, and other processes' commits wait for this one instead
    /// of being rebuilt.
    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        let shared = &*self.shared;
        let writer = shared.writer.lock().map_err(|_| poisoned())?;
        let flock = shared.flock()?;
        shared.reload(false)?;
        let state = shared.state.read().map_err(|_| poisoned())?;
        let snap = MapSnapshot { map: state.map.clone(), revision: state.revision };
        drop(state);
        Ok(Box::new(LockedWrite { shared, snap, _flock: flock, _writer: writer }))
    }

    fn sync_mode(&self) -> SyncMode {
        self.shared.sync
    }

    fn approx_len(&self) -> Result<Option<u64>> {
        Ok(Some(self.shared.state.read().map_err(|_| poisoned())?.map.len() as u64))
    }

    fn disk_size(&self) -> Result<u64> {
        fs::metadata(&self.shared.path).map(|m| m.len()).map_err(|e| self.shared.context(StoreError::io("size", e)))
    }

    /// Re-reads the file (under the file lock, so no other process replaces
    /// it meanwhile) and checks that it decodes. When it is the file this
    /// process last read or wrote, it must also hold what the state in memory
    /// holds: the same revision and the same records (compared decoded, since
    /// formats may renumber what the engine does not see, such as order keys,
    /// and a file laid out by hand may hold the same records). A file another
    /// process (or a person) has replaced since is taken up, as a snapshot
    /// would.
    fn check(&self) -> Result<Vec<String>> {
        let shared = &self.shared;
        let _writer = shared.writer.lock().map_err(|_| poisoned())?;
        let _flock = shared.flock()?;
        let Some((f, seen)) = shared.open_current()? else {
            return Ok(vec![format!("{} store {}: the file is missing", shared.format.name(), shared.path.display())]);
        };
        let bytes = shared.read_all(f, &seen)?;
        let (map, revision) = match shared.format.decode(&bytes) {
            Err(e) => return Ok(vec![shared.context(e).to_string()]),
            Ok(decoded) => decoded,
        };
        let mut state = shared.state.write().map_err(|_| poisoned())?;
        if state.seen != seen {
            *state = State { map: Arc::new(map), revision, seen };
            return Ok(Vec::new());
        }
        let name = || format!("{} store {}", shared.format.name(), shared.path.display());
        if revision != state.revision {
            return Ok(vec![format!(
                "{}: the file is at revision {revision}, the store in memory at revision {} (was the file changed in \
                 place?)",
                name(),
                state.revision
            )]);
        }
        let expected = shared.format.encode(&state.map, state.revision).map_err(|e| shared.context(e))?;
        if bytes == expected {
            return Ok(Vec::new());
        }
        let (want, _) = shared.format.decode(&expected).map_err(|e| shared.context(e))?;
        Ok(match first_difference(&map, &want) {
            None => Vec::new(), // the same records, laid out another way
            Some(k) => vec![format!(
                "{}: the file holds other data than the store in memory (revision {revision}), first at record {}",
                name(),
                describe_record(&k)
            )],
        })
    }

    fn flush(&self) -> Result<()> {
        let _state = self.shared.state.read().map_err(|_| poisoned())?;
        let io = |e| self.shared.context(StoreError::io("flush", e));
        fs::File::open(&self.shared.path).and_then(|f| f.sync_all()).map_err(io)?;
        self.shared.sync_dir().map_err(io)
    }
}

/// A transaction holding the store's locks from its first read to its commit.
struct LockedWrite<'a> {
    shared: &'a Shared,
    snap: MapSnapshot,
    // Released in this order: the file lock, then the process's writer.
    _flock: FileLock<'a>,
    _writer: MutexGuard<'a, ()>,
}

impl Snapshot for LockedWrite<'_> {
    fn revision(&self) -> u64 {
        self.snap.revision()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.snap.get(key)
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        self.snap.scan(start, end, reverse, visit)
    }
}

impl WriteView for LockedWrite<'_> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let revision = self.snap.revision();
        match batch.expect_revision {
            Some(r) if r != revision => Err(StoreError::stale_batch(r, revision)),
            _ => self.shared.commit_locked(&batch.ops, Some(revision)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Makes this thread's directory flushes fail.
        pub(crate) static FAIL_DIR_SYNC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    fn put(k: &[u8], v: &[u8]) -> Batch {
        let mut b = Batch::default();
        b.put(k.to_vec(), v.to_vec());
        b
    }

    /// The process that creates a store file holds what the file holds,
    /// records the format keeps of its own included, as a process that opens
    /// the file afterwards reads it: both see the same store at revision 0.
    #[test]
    fn the_creator_of_a_store_file_sees_what_others_read() {
        for format in [&json::JsonFormat as &'static dyn Format, &snapshot::SnapshotFormat] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("store");
            let creator = FileBackend::open(&path, format, SyncMode::Commit).unwrap();
            let mine = creator.snapshot().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let (theirs, revision) = format.decode(&bytes).unwrap();
            assert_eq!(revision, 0);
            assert_eq!(mine.revision(), 0);
            let mut seen = Vec::new();
            mine.scan(b"", None, false, &mut |k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                Ok(true)
            })
            .unwrap();
            let expected: Vec<_> = theirs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(seen, expected, "{}", format.name());
        }
    }

    /// A commit whose file replaced the old one stays committed in memory when
    /// only the directory flush fails: memory and file agree, before and
    /// after reopening, and the error says the commit is done.
    #[test]
    fn a_failed_directory_flush_after_the_rename_keeps_the_commit() {
        for format in [&json::JsonFormat as &'static dyn Format, &snapshot::SnapshotFormat] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("store");
            {
                let b = FileBackend::open(&path, format, SyncMode::Commit).unwrap();
                assert_eq!(b.apply(&put(b"\x00a", b"1")).unwrap(), 1);
                FAIL_DIR_SYNC.with(|f| f.set(true));
                let e = b.apply(&put(b"\x00b", b"2")).expect_err("the flush fails");
                FAIL_DIR_SYNC.with(|f| f.set(false));
                assert_eq!(e.kind(), ErrorKind::Io, "{e}");
                assert!(e.to_string().contains("committed revision 2"), "{e}");
                let snap = b.snapshot().unwrap();
                assert_eq!(snap.revision(), 2);
                assert_eq!(snap.get(b"\x00b").unwrap().as_deref(), Some(&b"2"[..]));
                drop(snap);
                assert!(b.check().unwrap().is_empty(), "{:?}", b.check());
                assert_eq!(b.apply(&put(b"\x00c", b"3")).unwrap(), 3);
            }
            let b = FileBackend::open(&path, format, SyncMode::Commit).unwrap();
            let snap = b.snapshot().unwrap();
            assert_eq!(snap.revision(), 3);
            assert_eq!(snap.get(b"\x00b").unwrap().as_deref(), Some(&b"2"[..]));
        }
    }
}
