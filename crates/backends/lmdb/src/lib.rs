//! canopy's default embedded backend: LMDB through `heed`.
//!
//! One LMDB environment per store directory (`data.mdb`, `lock.mdb`), one
//! unnamed database of ordered byte keys. LMDB gives snapshots (MVCC read
//! transactions), one writer at a time across processes, and crash safety by
//! copy-on-write pages with two meta pages.
//!
//! * `sync=commit` (default): every commit is flushed before `apply` returns.
//! * `sync=off`: commits are not flushed (`MDB_NOSYNC`); they survive a crash of
//!   the process, and are flushed by [`Backend::flush`], on close, and by the
//!   operating system. A crash of the machine may lose recent commits.
//! * The memory map grows as data grows: a commit that fills it doubles it and
//!   runs again.
//! * The file shrinks on its own when deletes leave most of it free and no
//!   other process has the store open (`shrink`).

#![allow(unsafe_code)] // heed marks opening and resizing a memory map `unsafe`; see SAFETY notes.

use std::fs;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, Weak};

use canopy_store::backend::{Backend, Batch, BatchOp, Snapshot, SyncMode};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::files::FileMode;
use canopy_store::keys::{FORMAT, FORMAT_VERSION, REVISION};
use canopy_store::StoreUrl;
use heed::types::Bytes;
use heed::{CompactionOption, Database, EnvFlags, EnvOpenOptions, FlagSetMode, MdbError, WithoutTls};

/// Read transactions are not tied to threads (`MDB_NOTLS`): a thread may hold
/// several snapshots, and snapshots may move between threads.
type Env = heed::Env<WithoutTls>;

type Db = Database<Bytes, Bytes>;

/// The smallest map: 1 GiB of address space (not of disk).
const MIN_MAP: usize = 1 << 30;
const DATA_FILE: &str = "data.mdb";

mod bulk;
mod release;
mod shrink;

struct Inner {
    // Field order matters: the environment closes before the lock file's
    // descriptor (closing that releases the process's locks; see `shrink`).
    env: Env,
    db: Db,
    lock: fs::File,
    /// The revision read at the last snapshot, with that snapshot's LMDB
    /// transaction id: a read of the same committed state (the same id in
    /// this environment) takes it instead of looking the revision key up.
    seen: Mutex<(usize, u64)>,
}

/// The environment of an open store, or an error when a compaction could not
/// reopen it.
fn opened<'a>(g: &'a Option<Inner>, dir: &Path) -> Result<&'a Inner> {
    g.as_ref().ok_or_else(|| {
        StoreError::new(
            ErrorKind::Unavailable,
            format!(
                "lmdb store {}: closed after a compaction failed to reopen it; open the store again",
                dir.display()
            ),
        )
    })
}

/// An LMDB store. Opening the same directory twice in one process gives two
/// handles on one environment (LMDB allows one per process).
pub struct LmdbBackend {
    shared: Arc<Shared>,
}

/// The environment of one directory, shared by every handle in the process.
struct Shared {
    dir: PathBuf,
    /// The data file, by its canonical path (as the process's map list names it).
    data_file: PathBuf,
    sync: SyncMode,
    /// Readers and writers hold it shared; resizing and compaction hold it
    /// exclusively (LMDB requires that no transaction of this process is open
    /// while the map is resized or the environment closed).
    inner: RwLock<Option<Inner>>,
    /// Held by every write transaction of this process, so that a commit
    /// made without a flush (which sets `MDB_NOSYNC` on the environment for
    /// its commit) never lends that setting to another thread's commit.
    write_gate: Mutex<()>,
    /// Set by a commit that left the file mostly free and could not compact
    /// it at once (a snapshot of this process was open); the next snapshot
    /// tries.
    shrink_wanted: AtomicBool,
}

/// Environments open in this process, by canonical directory.
static OPEN: Mutex<Vec<(PathBuf, Weak<Shared>)>> = Mutex::new(Vec::new());

fn lmdb_err(dir: &Path, what: &str, e: heed::Error) -> StoreError {
    let errno = match &e {
        heed::Error::Io(io) => io.raw_os_error(),
        heed::Error::Mdb(MdbError::Other(code)) => Some(*code),
        _ => None,
    };
    let context = format!("lmdb store {}: {what}", dir.display());
    if let Some(full) = StoreError::no_space(&context, errno) {
        return full;
    }
    // LMDB reports a write cut short by a full disk as EIO: say which it was
    // when the filesystem has (almost) no room left.
    const EIO: i32 = 5;
    if errno == Some(EIO) {
        if let Ok(free) = free_bytes(dir) {
            if free < NEARLY_FULL {
                return StoreError::new(
                    ErrorKind::NoSpace,
                    format!(
                        "{context}: no space left on device (LMDB reported an I/O error with {free} bytes free on the \
                         filesystem of {}); the transaction was not stored",
                        dir.display()
                    ),
                );
            }
        }
    }
    let kind = match &e {
        heed::Error::Mdb(MdbError::Invalid)
        | heed::Error::Mdb(MdbError::Corrupted)
        | heed::Error::Mdb(MdbError::PageNotFound) => ErrorKind::Corrupted,
        heed::Error::Mdb(MdbError::VersionMismatch) => ErrorKind::Unsupported,
        heed::Error::Mdb(MdbError::BadValSize) => ErrorKind::Unsupported,
        heed::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        heed::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => ErrorKind::Unavailable,
        heed::Error::EnvAlreadyOpened => ErrorKind::Unavailable,
        _ => ErrorKind::Io,
    };
    let hint = match kind {
        ErrorKind::Corrupted => " (the file is damaged or is not an LMDB store)",
        _ => "",
    };
    StoreError::new(kind, format!("lmdb store {}: {what}: {e}{hint}", dir.display()))
}

/// Below this much free space an I/O error of a write is taken for a full disk.
const NEARLY_FULL: u64 = 1 << 20;

/// The bytes an unprivileged user may still write on `dir`'s filesystem.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(dir)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

fn poisoned() -> StoreError {
    StoreError::new(ErrorKind::Unavailable, "lmdb store lock poisoned by a panic")
}

fn page_round(n: usize) -> usize {
    let page = 4096;
    n.div_ceil(page) * page
}

impl LmdbBackend {
    /// Opens the store a URL names (`lmdb:DIR?sync=commit|off`, or a bare directory).
    ///
    /// # Errors
    /// `InvalidUrl` for unknown parameters; see [`LmdbBackend::open`].
    pub fn open_url(url: &StoreUrl) -> Result<LmdbBackend> {
        url.check_params(&["sync", "mode"])?;
        LmdbBackend::open_with_mode(Path::new(&url.location), url.sync_mode()?, url.file_mode()?)
    }

    /// Opens or creates the store in directory `dir`, new files `0600` and a
    /// new directory `0700`.
    ///
    /// # Errors
    /// As [`LmdbBackend::open_with_mode`].
    pub fn open(dir: &Path, sync: SyncMode) -> Result<LmdbBackend> {
        LmdbBackend::open_with_mode(dir, sync, FileMode::default())
    }

    /// Opens or creates the store in directory `dir`; a directory and files
    /// it creates get `mode` (LMDB creates its files `0600`; they are changed
    /// when `mode` says otherwise).
    ///
    /// # Errors
    /// `Corrupted` for a damaged or foreign `data.mdb` (including a truncated
    /// one), `Unsupported` for a store of a newer layout, `Unavailable` when the
    /// directory cannot be used or the store is already open in this process.
    pub fn open_with_mode(dir: &Path, sync: SyncMode, mode: FileMode) -> Result<LmdbBackend> {
        if dir.exists() && !dir.is_dir() {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("lmdb store {}: not a directory", dir.display()),
            ));
        }
        mode.create_dir_all(dir).map_err(|e| StoreError::io(format!("lmdb store {}", dir.display()), e))?;
        let canonical =
            fs::canonicalize(dir).map_err(|e| StoreError::io(format!("lmdb store {}", dir.display()), e))?;
        let mut open = OPEN.lock().map_err(|_| poisoned())?;
        open.retain(|(_, w)| w.strong_count() > 0);
        if let Some(shared) = open.iter().find(|(p, _)| *p == canonical).and_then(|(_, w)| w.upgrade()) {
            if shared.sync != sync {
                return Err(StoreError::new(
                    ErrorKind::Unavailable,
                    format!("lmdb store {}: already open in this process with another sync mode", dir.display()),
                ));
            }
            return Ok(LmdbBackend { shared });
        }
        let file_len = fs::metadata(dir.join(DATA_FILE)).map(|m| m.len() as usize).unwrap_or(0);
        let new_files: Vec<PathBuf> =
            [DATA_FILE, "lock.mdb"].iter().map(|f| dir.join(f)).filter(|p| !p.exists()).collect();
        let inner = open_env(dir, sync, page_round((file_len * 2).max(MIN_MAP)))?;
        if mode != FileMode::default() {
            for f in &new_files {
                // The lock file through the descriptor the backend keeps:
                // closing another one would release LMDB's locks.
                let set = match f.ends_with(shrink::LOCK_FILE) {
                    true => mode.fix(&inner.lock),
                    false => fs::File::open(f).and_then(|file| mode.fix(&file)),
                };
                set.map_err(|e| {
                    StoreError::io(format!("lmdb store {}: set the mode of {}", dir.display(), f.display()), e)
                })?;
            }
        }
        check_not_truncated(dir, &inner.env, file_len)?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            data_file: canonical.join(DATA_FILE),
            sync,
            inner: RwLock::new(Some(inner)),
            write_gate: Mutex::new(()),
            shrink_wanted: AtomicBool::new(false),
        });
        shared.init_format()?;
        open.push((canonical, Arc::downgrade(&shared)));
        Ok(LmdbBackend { shared })
    }
}

impl Shared {
    /// Writes the layout version into a new store; refuses a store of another.
    fn init_format(&self) -> Result<()> {
        let g = self.read()?;
        let inner = opened(&g, &self.dir)?;
        let rtxn = inner.env.read_txn().map_err(|e| lmdb_err(&self.dir, "read", e))?;
        let found = inner.db.get(&rtxn, FORMAT).map_err(|e| lmdb_err(&self.dir, "read", e))?.map(<[u8]>::to_vec);
        let empty = inner.db.is_empty(&rtxn).map_err(|e| lmdb_err(&self.dir, "read", e))?;
        drop(rtxn);
        match found {
            Some(v) => {
                let v: [u8; 4] = v.as_slice().try_into().map_err(|_| {
                    StoreError::corrupted(format!("lmdb store {}: format record damaged", self.dir.display()))
                })?;
                let v = u32::from_be_bytes(v);
                if v != FORMAT_VERSION {
                    return Err(StoreError::new(
                        ErrorKind::Unsupported,
                        format!(
                            "lmdb store {}: layout version {v}; this canopy reads version {FORMAT_VERSION}",
                            self.dir.display()
                        ),
                    ));
                }
                Ok(())
            }
            None if empty => {
                let _gate = self.write_gate.lock().map_err(|_| poisoned())?;
                let mut wtxn = inner.env.write_txn().map_err(|e| lmdb_err(&self.dir, "write", e))?;
                inner
                    .db
                    .put(&mut wtxn, FORMAT, &FORMAT_VERSION.to_be_bytes())
                    .map_err(|e| lmdb_err(&self.dir, "write", e))?;
                wtxn.commit().map_err(|e| lmdb_err(&self.dir, "commit", e))
            }
            None => Err(StoreError::corrupted(format!(
                "lmdb store {}: holds data but no canopy format record (not a canopy store?)",
                self.dir.display()
            ))),
        }
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Option<Inner>>> {
        self.inner.read().map_err(|_| poisoned())
    }

    /// Doubles the memory map (after `MDB_MAP_FULL`) or adopts the size another
    /// process set (`MDB_MAP_RESIZED`, `grow == false`).
    fn resize(&self, grow: bool) -> Result<()> {
        let g = self.inner.write().map_err(|_| poisoned())?;
        let inner = opened(&g, &self.dir)?;
        let new = if grow { page_round(inner.env.info().map_size * 2) } else { 0 };
        // SAFETY: we hold the exclusive lock, so no transaction of this process is open.
        unsafe { inner.env.resize(new) }.map_err(|e| lmdb_err(&self.dir, "resize the map", e))
    }

    /// Commits `batch`; gives the new revision and whether the commit left
    /// the file mostly free (worth compacting).
    fn try_apply(&self, batch: &Batch, flush: bool) -> std::result::Result<(u64, bool), heed::Error> {
        let g = self.inner.read().map_err(|_| heed::Error::Mdb(MdbError::Panic))?;
        let inner = g.as_ref().ok_or(heed::Error::Mdb(MdbError::Panic))?;
        let _gate = self.write_gate.lock().map_err(|_| heed::Error::Mdb(MdbError::Panic))?;
        let mut wtxn = inner.env.write_txn()?;
        let rev = read_revision(&inner.db, &wtxn)?;
        if let Some(expect) = batch.expect_revision {
            if expect != rev {
                // Reported as a conflict by the caller.
                return Err(heed::Error::Mdb(MdbError::Other(i32::MIN)));
            }
        }
        for op in &batch.ops {
            match op {
                BatchOp::Put(k, v) => inner.db.put(&mut wtxn, k, v)?,
                BatchOp::Delete(k) => {
                    inner.db.delete(&mut wtxn, k)?;
                }
                BatchOp::DeletePrefix(p) => {
                    let end = canopy_store::backend::prefix_end(p);
                    let hi = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                    inner.db.delete_range(&mut wtxn, &(lower_bound(p), hi))?;
                }
            }
        }
        inner.db.put(&mut wtxn, REVISION, &(rev + 1).to_be_bytes())?;
        let stat = inner.db.stat(&wtxn)?;
        let used = stat.branch_pages + stat.leaf_pages + stat.overflow_pages;
        if flush || self.sync == SyncMode::Off {
            wtxn.commit()?;
        } else {
            // SAFETY: NO_SYNC only changes whether this commit is flushed (it
            // stays atomic); the write gate keeps other commits of this
            // process out until the flag is cleared again.
            unsafe { inner.env.set_flags(EnvFlags::NO_SYNC, FlagSetMode::Enable)? };
            let committed = wtxn.commit();
            unsafe { inner.env.set_flags(EnvFlags::NO_SYNC, FlagSetMode::Disable)? };
            committed?;
        }
        let file_pages = inner.env.info().last_page_number + 1;
        Ok((rev + 1, shrink::mostly_free(used, file_pages, stat.page_size as usize)))
    }
}

/// The lower bound of a range from `start`: LMDB refuses an empty key, even as
/// a bound, and every key is at least the empty one.
fn lower_bound(start: &[u8]) -> Bound<&[u8]> {
    if start.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(start)
    }
}

fn read_revision(db: &Db, txn: &heed::RoTxn) -> std::result::Result<u64, heed::Error> {
    Ok(match db.get(txn, REVISION)? {
        Some(b) if b.len() == 8 => u64::from_be_bytes(b.try_into().expect("8 bytes")),
        Some(_) => return Err(heed::Error::Mdb(MdbError::Corrupted)),
        None => 0,
    })
}

fn open_env(dir: &Path, sync: SyncMode, map_size: usize) -> Result<Inner> {
    let mut opts = EnvOpenOptions::new().read_txn_without_tls();
    opts.map_size(map_size).max_dbs(0).max_readers(126);
    if sync == SyncMode::Off {
        // SAFETY: NO_SYNC only changes when LMDB flushes; see the module doc.
        unsafe { opts.flags(EnvFlags::NO_SYNC) };
    }
    // The last handle of this directory may still be closing in another
    // thread (its `Shared` is gone from `OPEN`, heed's environment not yet):
    // wait for it rather than fail.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let env = loop {
        // SAFETY: the map is only modified through LMDB; canopy never writes the
        // file otherwise, and LMDB's lock file coordinates processes.
        match unsafe { opts.open(dir) } {
            Err(heed::Error::EnvAlreadyOpened) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(1))
            }
            other => break other.map_err(|e| lmdb_err(dir, "open", e))?,
        }
    };
    let mut wtxn = env.write_txn().map_err(|e| lmdb_err(dir, "open", e))?;
    let db: Db = env.create_database(&mut wtxn, None).map_err(|e| lmdb_err(dir, "open the database", e))?;
    wtxn.commit().map_err(|e| lmdb_err(dir, "open", e))?;
    let lock = shrink::open_lock_file(dir)?;
    Ok(Inner { env, db, lock, seen: Mutex::new((0, 0)) })
}

/// A file shorter than the pages its meta page claims would make LMDB read past
/// the end of the map (SIGBUS): refuse it.
fn check_not_truncated(dir: &Path, env: &Env, file_len: usize) -> Result<()> {
    let info = env.info();
    let page = env.stat().page_size as usize;
    // A damaged meta page may claim any page count: overflow is damage too.
    let Some(needed) = info.last_page_number.checked_add(1).and_then(|n| n.checked_mul(page)) else {
        return Err(StoreError::corrupted(format!(
            "lmdb store {}: {DATA_FILE} is damaged (its meta page claims {} pages of {page} bytes)",
            dir.display(),
            info.last_page_number as u128 + 1
        )));
    };
    // Another process may have grown the file since `file_len` was taken: its
    // length now (after the meta page was read, so never shorter than that
    // meta page needs, unless truncated) decides.
    let file_len = match needed > file_len {
        true => fs::metadata(dir.join(DATA_FILE)).map(|m| m.len() as usize).unwrap_or(file_len),
        false => file_len,
    };
    if file_len != 0 && needed > file_len {
        return Err(StoreError::corrupted(format!(
            "lmdb store {}: {DATA_FILE} is truncated ({file_len} bytes, its pages need {needed})",
            dir.display()
        )));
    }
    Ok(())
}

struct LmdbSnapshot<'a> {
    // Field order matters: the transaction must end before the guard is released.
    txn: heed::RoTxn<'a, WithoutTls>,
    db: Db,
    revision: u64,
    dir: &'a Path,
    /// Bytes of keys and values scanned since the map's pages were last let go.
    scanned: std::sync::atomic::AtomicUsize,
    data_file: &'a Path,
    _guard: &'a RwLockReadGuard<'a, Option<Inner>>,
}

impl Snapshot for LmdbSnapshot<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(&self.txn, key).map(|v| v.map(<[u8]>::to_vec)).map_err(|e| lmdb_err(self.dir, "read", e))
    }

    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
        visit: &mut canopy_store::backend::Visit<'_>,
    ) -> Result<()> {
        let hi = end.map_or(Bound::Unbounded, Bound::Excluded);
        let range = (lower_bound(start), hi);
        let err = |e| lmdb_err(self.dir, "scan", e);
        let mut scanned = self.scanned.load(Ordering::Relaxed);
        let mut step = |k: &[u8], v: &[u8]| {
            scanned += k.len() + v.len();
            if scanned >= release::EVERY {
                release::map_pages(self.data_file);
                scanned = 0;
            }
            visit(k, v)
        };
        if reverse {
            for item in self.db.rev_range(&self.txn, &range).map_err(err)? {
                let (k, v) = item.map_err(err)?;
                if !step(k, v)? {
                    break;
                }
            }
        } else {
            for item in self.db.range(&self.txn, &range).map_err(err)? {
                let (k, v) = item.map_err(err)?;
                if !step(k, v)? {
                    break;
                }
            }
        }
        self.scanned.store(scanned, Ordering::Relaxed);
        Ok(())
    }
}

/// A snapshot that owns its read guard: the guard lives in a box the snapshot
/// borrows, so both drop together (transaction first).
struct OwnedSnapshot<'a> {
    snap: Option<LmdbSnapshot<'a>>,
    guard: *mut RwLockReadGuard<'a, Option<Inner>>,
}

impl Drop for OwnedSnapshot<'_> {
    fn drop(&mut self) {
        self.snap = None;
        // SAFETY: `guard` came from Box::into_raw in `snapshot` and nothing borrows it now.
        drop(unsafe { Box::from_raw(self.guard) });
    }
}

impl Snapshot for OwnedSnapshot<'_> {
    fn revision(&self) -> u64 {
        self.snap.as_ref().expect("live").revision()
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.snap.as_ref().expect("live").get(key)
    }
    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
        visit: &mut canopy_store::backend::Visit<'_>,
    ) -> Result<()> {
        self.snap.as_ref().expect("live").scan(start, end, reverse, visit)
    }
}

impl Shared {
    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        if self.shrink_wanted.swap(false, Ordering::Relaxed) {
            self.shrink();
        }
        for _ in 0..3 {
            let guard: *mut RwLockReadGuard<'_, Option<Inner>> = Box::into_raw(Box::new(self.read()?));
            // SAFETY: the box stays alive until OwnedSnapshot drops it, after the
            // transaction that borrows it.
            let g: &RwLockReadGuard<'_, Option<Inner>> = unsafe { &*guard };
            let inner = match opened(g, &self.dir) {
                Ok(inner) => inner,
                Err(e) => {
                    // SAFETY: as above; nothing borrows the guard.
                    drop(unsafe { Box::from_raw(guard) });
                    return Err(e);
                }
            };
            match inner.env.read_txn() {
                Ok(txn) => {
                    let id = txn.id();
                    let read = {
                        let mut seen = inner.seen.lock().unwrap_or_else(|p| p.into_inner());
                        match *seen {
                            (known, r) if known == id && id != 0 => Ok(r),
                            _ => read_revision(&inner.db, &txn).inspect(|&r| *seen = (id, r)),
                        }
                    };
                    let revision = match read {
                        Ok(r) => r,
                        Err(e) => {
                            drop(txn);
                            // SAFETY: as above; nothing borrows the guard any more.
                            drop(unsafe { Box::from_raw(guard) });
                            return Err(lmdb_err(&self.dir, "read the revision", e));
                        }
                    };
                    let snap = LmdbSnapshot {
                        txn,
                        db: inner.db,
                        revision,
                        dir: &self.dir,
                        scanned: Default::default(),
                        data_file: &self.data_file,
                        _guard: g,
                    };
                    return Ok(Box::new(OwnedSnapshot { snap: Some(snap), guard }));
                }
                Err(heed::Error::Mdb(MdbError::MapResized)) => {
                    // SAFETY: as above.
                    drop(unsafe { Box::from_raw(guard) });
                    self.resize(false)?;
                }
                Err(e) => {
                    // SAFETY: as above.
                    drop(unsafe { Box::from_raw(guard) });
                    return Err(lmdb_err(&self.dir, "begin a read", e));
                }
            }
        }
        Err(StoreError::new(
            ErrorKind::Unavailable,
            format!("lmdb store {}: map keeps being resized", self.dir.display()),
        ))
    }

    fn apply(&self, batch: &Batch, flush: bool) -> Result<u64> {
        loop {
            match self.try_apply(batch, flush) {
                Ok((rev, mostly_free)) => {
                    if mostly_free {
                        self.shrink();
                    }
                    return Ok(rev);
                }
                Err(heed::Error::Mdb(MdbError::MapFull)) => self.resize(true)?,
                Err(heed::Error::Mdb(MdbError::MapResized)) => self.resize(false)?,
                Err(heed::Error::Mdb(MdbError::Other(i32::MIN))) => {
                    return Err(StoreError::new(
                        ErrorKind::Conflict,
                        format!("lmdb store {}: another writer committed first", self.dir.display()),
                    ))
                }
                Err(heed::Error::Mdb(MdbError::BadValSize)) => {
                    let longest = batch.ops.iter().map(|op| match op {
                        BatchOp::Put(k, _) | BatchOp::Delete(k) | BatchOp::DeletePrefix(k) => k.len(),
                    });
                    return Err(StoreError::new(
                        ErrorKind::Unsupported,
                        format!(
                            "lmdb store {}: a key of {} bytes is longer than LMDB allows ({} bytes): shorten the path or its key values",
                            self.dir.display(),
                            longest.max().unwrap_or(0),
                            self.max_key_size()
                        ),
                    ));
                }
                Err(e) => return Err(lmdb_err(&self.dir, "commit", e)),
            }
        }
    }

    fn disk_size(&self) -> Result<u64> {
        let mut total = 0;
        for name in [DATA_FILE, "lock.mdb"] {
            if let Ok(m) = fs::metadata(self.dir.join(name)) {
                total += m.len();
            }
        }
        Ok(total)
    }

    fn compact(&self) -> Result<()> {
        let mut g = self.inner.write().map_err(|_| poisoned())?;
        match self.compact_alone(&mut g)? {
            true => Ok(()),
            false => Err(shrink::not_alone(&self.dir)),
        }
    }

    /// Compacts the file when it is mostly free, unless a snapshot of this
    /// process is open (then the next snapshot tries) or another process has
    /// the store open (then a later commit tries). The commit that asked is
    /// durable already: a compaction that fails leaves the store as it was.
    fn shrink(&self) {
        match self.inner.try_write() {
            Ok(mut g) => {
                let _ = self.compact_alone(&mut g);
            }
            Err(_) => self.shrink_wanted.store(true, Ordering::Relaxed),
        }
    }

    /// Replaces `data.mdb` by a compacted copy if no other process has the
    /// store open (`false`, nothing done, when one has). The caller holds the
    /// environment exclusively in this process.
    fn compact_alone(&self, g: &mut Option<Inner>) -> Result<bool> {
        if !shrink::alone(&self.dir, &opened(g, &self.dir)?.lock)? {
            return Ok(false);
        }
        // From here until the environment closes, no other process opens,
        // reads or writes the store.
        let inner = g.take().expect("checked above");
        let tmp = self.dir.join("compact.mdb.tmp");
        let _ = fs::remove_file(&tmp);
        let copied = inner.env.copy_to_path(&tmp, CompactionOption::Enabled);
        let map = inner.env.info().map_size;
        let result = copied.map_err(|e| lmdb_err(&self.dir, "compact", e)).and_then(|f| {
            // The copy keeps data.mdb's permissions, not the umask's.
            if let Ok(m) = fs::metadata(self.dir.join(DATA_FILE)) {
                f.set_permissions(m.permissions()).map_err(|e| StoreError::io("compact: set the copy's mode", e))?;
            }
            f.sync_all().map_err(|e| StoreError::io("compact: sync the copy", e))?;
            fs::rename(&tmp, self.dir.join(DATA_FILE)).map_err(|e| StoreError::io("compact: replace data.mdb", e))?;
            fs::File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| StoreError::io("compact: sync dir", e))
        });
        // Closing the environment, then the lock file, releases the lock.
        let Inner { env, db: _, lock, seen: _ } = inner;
        env.prepare_for_closing().wait();
        drop(lock);
        // Reopen whatever is there now: the compacted file, or the old one if
        // compaction failed before the rename.
        let _ = fs::remove_file(&tmp);
        *g = Some(open_env(&self.dir, self.sync, map)?);
        result.map(|()| true)
    }

    fn check(&self) -> Result<Vec<String>> {
        let g = self.read()?;
        let inner = opened(&g, &self.dir)?;
        let mut problems = Vec::new();
        let file_len = fs::metadata(self.dir.join(DATA_FILE)).map(|m| m.len() as usize).unwrap_or(0);
        if let Err(e) = check_not_truncated(&self.dir, &inner.env, file_len) {
            problems.push(e.to_string());
        }
        Ok(problems)
    }

    fn flush(&self) -> Result<()> {
        let g = self.read()?;
        opened(&g, &self.dir)?.env.force_sync().map_err(|e| lmdb_err(&self.dir, "flush", e))
    }
}

impl Shared {
    fn max_key_size(&self) -> usize {
        self.read().ok().and_then(|g| g.as_ref().map(|i| i.env.max_key_size())).unwrap_or(0)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Ok(mut g) = self.inner.write() {
            if let Some(inner) = g.take() {
                if self.sync == SyncMode::Off {
                    let _ = inner.env.force_sync();
                }
                let closing = inner.env.prepare_for_closing();
                closing.wait();
            }
        }
    }
}

impl Backend for LmdbBackend {
    fn kind(&self) -> &'static str {
        "lmdb"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.shared.snapshot()
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        self.shared.apply(batch, true)
    }

    fn apply_unflushed(&self, batch: &Batch) -> Result<u64> {
        self.shared.apply(batch, false)
    }

    fn bulk_writes(&self) -> bool {
        true
    }

    /// One write transaction on a thread of its own (see `bulk`).
    fn begin_bulk(&self, expect_revision: u64) -> Result<Option<Box<dyn canopy_store::BulkWrite>>> {
        bulk::begin(&self.shared, expect_revision)
    }

    fn sync_mode(&self) -> SyncMode {
        self.shared.sync
    }

    fn disk_size(&self) -> Result<u64> {
        self.shared.disk_size()
    }

    /// LMDB keeps the entry count in its database record: no scan.
    fn approx_len(&self) -> Result<Option<u64>> {
        let g = self.shared.read()?;
        let inner = opened(&g, &self.shared.dir)?;
        let txn = inner.env.read_txn().map_err(|e| lmdb_err(&self.shared.dir, "count", e))?;
        let n = inner.db.len(&txn).map_err(|e| lmdb_err(&self.shared.dir, "count", e))?;
        Ok(Some(n))
    }

    fn compact(&self) -> Result<()> {
        self.shared.compact()
    }

    fn check(&self) -> Result<Vec<String>> {
        self.shared.check()
    }

    fn flush(&self) -> Result<()> {
        self.shared.flush()
    }
}
