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
//! * One process writes: opening takes an exclusive lock (`flock`) on
//!   `PATH.lock` and holds it while the store is open; another process gets
//!   `Unavailable`. Handles opened in one process on one path share one state.
//! * The revision is stored in the file, not as a key of the map.

pub mod json;
pub mod snapshot;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};

use canopy_store::backend::{Backend, Batch, BatchOp, Snapshot, SyncMode};
use canopy_store::error::{ErrorKind, Result, StoreError};
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

struct State {
    map: Arc<Map>,
    revision: u64,
}

/// The state of one store file, shared by every handle in the process.
struct Shared {
    path: PathBuf,
    format: &'static dyn Format,
    sync: SyncMode,
    /// Readers clone the map under the read lock; `apply` holds the write lock
    /// until the file is written, so nobody sees a batch that may be undone.
    state: RwLock<State>,
    /// Holds the exclusive `flock` on `PATH.lock` while the store is open.
    _lock: fs::File,
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
    /// Opens the store a URL names: `snapshot:PATH?sync=commit|off` or
    /// `json:PATH?sync=commit|off`.
    ///
    /// # Errors
    /// `InvalidUrl` for an unknown scheme or parameter; see [`FileBackend::open`].
    pub fn open_url(url: &StoreUrl) -> Result<FileBackend> {
        url.check_params(&["sync"])?;
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
        FileBackend::open(Path::new(&url.location), format, url.sync_mode()?)
    }

    /// Opens the store in file `path`, creating it (and its directory) when absent.
    ///
    /// # Errors
    /// `Unavailable` when another process holds the store, when `path` is a
    /// directory, or when this process has it open in another format or sync
    /// mode; the format's `Corrupted` / `Unsupported` for a file it refuses;
    /// I/O errors.
    pub fn open(path: &Path, format: &'static dyn Format, sync: SyncMode) -> Result<FileBackend> {
        let ctx = || format!("{} store {}", format.name(), path.display());
        if path.is_dir() {
            return Err(StoreError::new(ErrorKind::Unavailable, format!("{}: is a directory", ctx())));
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(|e| StoreError::io(ctx(), e))?;
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
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StoreError::io(format!("{}: lock file", ctx()), e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::new(
                    ErrorKind::Unavailable,
                    format!("{}: in use by another process (it holds {})", ctx(), lock_path.display()),
                ))
            }
            Err(fs::TryLockError::Error(e)) => return Err(StoreError::io(format!("{}: lock", ctx()), e)),
        }
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            format,
            sync,
            state: RwLock::new(State { map: Arc::new(Map::new()), revision: 0 }),
            _lock: lock,
        });
        // A temporary file is left only by a commit that did not finish.
        let _ = fs::remove_file(shared.tmp_path());
        match fs::read(path) {
            Ok(bytes) => {
                let (map, revision) = format.decode(&bytes).map_err(|e| shared.context(e))?;
                *shared.state.write().map_err(|_| poisoned())? = State { map: Arc::new(map), revision };
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match shared.write_file(&Map::new(), 0)? {
                Written::Durable => {}
                Written::Unflushed(e) => return Err(StoreError::io(format!("{}: flush the directory", ctx()), e)),
            },
            Err(e) => return Err(StoreError::io(ctx(), e)),
        }
        open.push((canonical, Arc::downgrade(&shared)));
        Ok(FileBackend { shared })
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

    /// Replaces the file atomically by one holding `map` at `revision`.
    /// [`Written::Unflushed`] when the file was replaced but the directory
    /// could not be flushed: the new state is the file's.
    fn write_file(&self, map: &Map, revision: u64) -> Result<Written> {
        let bytes = self.format.encode(map, revision).map_err(|e| self.context(e))?;
        let tmp = self.tmp_path();
        let io =
            |what: &str, e| StoreError::io(format!("{} store {}: {what}", self.format.name(), self.path.display()), e);
        let written = (|| {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            if self.sync == SyncMode::Commit {
                f.sync_all()?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io("write the new file", e));
        }
        fs::rename(&tmp, &self.path).map_err(|e| io("replace the file", e))?;
        if self.sync == SyncMode::Commit {
            if let Err(e) = self.sync_dir() {
                return Ok(Written::Unflushed(e));
            }
        }
        Ok(Written::Durable)
    }

    fn sync_dir(&self) -> std::io::Result<()> {
        #[cfg(test)]
        if tests::FAIL_DIR_SYNC.with(std::cell::Cell::get) {
            return Err(std::io::Error::other("injected failure"));
        }
        let dir = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        fs::File::open(dir)?.sync_all()
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        let mut state = self.state.write().map_err(|_| poisoned())?;
        if let Some(expect) = batch.expect_revision {
            if expect != state.revision {
                return Err(StoreError::new(
                    ErrorKind::Conflict,
                    format!(
                        "{} store {}: the store changed (revision {}, expected {expect})",
                        self.format.name(),
                        self.path.display(),
                        state.revision
                    ),
                ));
            }
        }
        let revision = state.revision + 1;
        let map = Arc::make_mut(&mut state.map);
        let undo = apply_ops(map, &batch.ops);
        match self.write_file(map, revision) {
            Ok(Written::Durable) => {
                state.revision = revision;
                Ok(revision)
            }
            // The file holds the new state: so does the store in memory, or
            // a "failed" commit would come back at the next open.
            Ok(Written::Unflushed(e)) => {
                state.revision = revision;
                Err(StoreError::io(
                    format!(
                        "{} store {}: committed revision {revision} (the file holds it), but flushing its directory                          failed, so the commit may not survive a machine crash",
                        self.format.name(),
                        self.path.display()
                    ),
                    e,
                ))
            }
            Err(e) => {
                undo_ops(map, undo);
                Err(e)
            }
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

/// What a key held before a batch changed it.
type Undo = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn apply_ops(map: &mut Map, ops: &[BatchOp]) -> Undo {
    let mut undo = Vec::new();
    for op in ops {
        match op {
            BatchOp::Put(k, v) => {
                let old = map.insert(k.clone(), v.clone());
                undo.push((k.clone(), old));
            }
            BatchOp::Delete(k) => {
                if let Some(old) = map.remove(k) {
                    undo.push((k.clone(), Some(old)));
                }
            }
            BatchOp::DeletePrefix(p) => {
                let removed: Vec<Vec<u8>> =
                    map.range(p.clone()..).take_while(|(k, _)| k.starts_with(p)).map(|(k, _)| k.clone()).collect();
                for k in removed {
                    let old = map.remove(&k);
                    undo.push((k, old));
                }
            }
        }
    }
    undo
}

fn undo_ops(map: &mut Map, undo: Undo) {
    for (k, old) in undo.into_iter().rev() {
        match old {
            Some(v) => map.insert(k, v),
            None => map.remove(&k),
        };
    }
}

impl Backend for FileBackend {
    fn kind(&self) -> &'static str {
        self.shared.format.name()
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let state = self.shared.state.read().map_err(|_| poisoned())?;
        Ok(Box::new(MapSnapshot { map: state.map.clone(), revision: state.revision }))
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        self.shared.apply(batch)
    }

    fn sync_mode(&self) -> SyncMode {
        self.shared.sync
    }

    fn disk_size(&self) -> Result<u64> {
        fs::metadata(&self.shared.path).map(|m| m.len()).map_err(|e| self.shared.context(StoreError::io("size", e)))
    }

    /// Re-reads the file and checks that it decodes, and that it holds what
    /// the state in memory holds: the same revision, and the same records as
    /// the file the state encodes to (compared decoded, since formats may
    /// renumber what the engine does not see, such as order keys, and a file
    /// edited by hand may be laid out differently and still hold the same).
    fn check(&self) -> Result<Vec<String>> {
        let state = self.shared.state.read().map_err(|_| poisoned())?;
        let bytes = fs::read(&self.shared.path).map_err(|e| self.shared.context(StoreError::io("read", e)))?;
        let expected = self.shared.format.encode(&state.map, state.revision).map_err(|e| self.shared.context(e))?;
        let name = || format!("{} store {}", self.shared.format.name(), self.shared.path.display());
        let (map, revision) = match self.shared.format.decode(&bytes) {
            Err(e) => return Ok(vec![self.shared.context(e).to_string()]),
            Ok(decoded) => decoded,
        };
        if revision != state.revision {
            return Ok(vec![format!(
                "{}: the file is at revision {revision}, the store in memory at revision {} (was the file replaced?)",
                name(),
                state.revision
            )]);
        }
        if bytes == expected {
            return Ok(Vec::new());
        }
        let (want, _) = self.shared.format.decode(&expected).map_err(|e| self.shared.context(e))?;
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
