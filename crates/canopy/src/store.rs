//! The store: opening one by URL, what a connection holds (its backend,
//! the catalog of the newest revision, the cache, its identity), and the
//! few operations on the store as a whole. Sessions, transactions and reads
//! are in their own modules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use canopy_core::tree::ListInfo;
use canopy_core::{Schema, Schemaless};
use canopy_store::keys::{self, Datastore};
use canopy_store::{Backend, Batch, ErrorKind, Snapshot, StoreUrl};

use crate::cache::Cached;
use crate::catalog::{Catalog, Catalogs};
use crate::connections::{Conn, Control};
use crate::error::{Error, Result};
use crate::hub::Hub;
use crate::watch::Watch;

/// How a store is opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep each datastore's tree in memory: reads take their data from it
    /// (checking the store's revision), writes go through to the backend as
    /// diffs. The URL parameter `cache=on` sets it.
    pub cache: bool,
    /// With `cache`, on a backend that announces commits (the database
    /// servers'): cached reads trust the revision the store's announcements
    /// say instead of reading it from the server each time. Commits made
    /// through this store are read at once; others (another process's,
    /// another store's) once their announcement arrives. `false` on other backends changes nothing. The
    /// URL parameter `cache=watch` sets it (with `cache`).
    pub watch: bool,
    /// How many commits the store's change log keeps for the other processes
    /// attached to it (`None`: 1,000 on a backend that announces commits to
    /// them, none on the others). The URL parameter `changelog=N` sets it.
    pub changelog: Option<u64>,
}

/// Commits the change log keeps by default on a backend that announces
/// commits to other processes.
pub(crate) const DEFAULT_CHANGELOG: u64 = 1000;

/// An open store.
pub struct Store {
    pub(crate) backend: Arc<dyn Backend>,
    /// Commits the change log keeps (0: no change log is written).
    pub(crate) changelog: u64,
    pub(crate) url: String,
    /// What the newest revision seen says besides its data: lists, the YANG
    /// schema, locks and the candidate's state, as one unit.
    pub(crate) catalog: Catalogs,
    /// One writer at a time in this connection; other connections and
    /// processes are caught by the revision check of each batch.
    pub(crate) writer: Mutex<()>,
    pub(crate) cache: Option<RwLock<HashMap<Datastore, Cached>>>,
    /// With `cache=watch` on a backend that announces commits: the revision
    /// heard, so that cached reads need not ask the server.
    pub(crate) watch: Option<Watch>,
    /// The cache mode asked for (`off`, `on`, `watch`).
    cache_mode: &'static str,
    /// This connection (locks and pushed state belong to it).
    pub(crate) conn: Conn,
    /// Whether this connection ever asked for a lock: only then has its
    /// drop locks to release.
    pub(crate) locking: std::sync::atomic::AtomicBool,
    /// What the connections of this store in this process share.
    pub(crate) hub: Arc<Hub>,
}

impl Drop for Store {
    /// Releases this connection's locks and pushed state. That I/O runs on
    /// a thread of its own: a store may be dropped where blocking is not
    /// allowed (a task of an async runtime, where PostgreSQL's blocking
    /// client panics), and a drop has no caller to report an error to.
    fn drop(&mut self) {
        let locking = *self.locking.get_mut();
        let pushed = self.hub.pushed.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&self.conn.id);
        if locking || pushed {
            let this = &*self;
            let release = || {
                if locking {
                    this.release_locks();
                }
                let _ = this.clear_pushed();
            };
            std::thread::scope(|s| {
                // No thread to be had: here, then.
                if std::thread::Builder::new().spawn_scoped(s, release).is_err() {
                    release();
                }
            });
        }
        self.conn.close();
    }
}

/// Work on one datastore of a store.
///
/// On operational, a session reads the operational view (running's
/// configuration merged with state; see [`Store::provide`]) and its writes
/// push state that lasts as long as its connection ([`Store`]); a
/// [`Session::stored`] session reads and writes the state kept in the store
/// instead, which lasts until deleted.
pub struct Session<'s> {
    pub(crate) store: &'s Store,
    pub(crate) ds: Datastore,
    pub(crate) stored: bool,
}

/// How many times a transaction is rebuilt when another process committed first.
pub(crate) const CONFLICT_RETRIES: usize = 60;

/// Waits before attempt `n` (from 1) after a conflict: a random time up to a
/// bound that doubles with each attempt (from 100 µs, at most 50 ms), so that
/// writers that keep meeting each other fall out of step even when one commit
/// takes milliseconds (a database server's round trips). Sixty attempts give
/// a writer that keeps losing about a second and a half before it gives up.
pub fn conflict_pause(n: usize) {
    let bound = (100u64 << n.min(9)).min(50_000);
    std::thread::sleep(std::time::Duration::from_micros(pause_random() % (bound + 1)));
}

/// A number that differs between calls, threads and processes (no more is
/// asked of it): the clock's nanoseconds, the process id and a per-thread
/// counter, mixed.
fn pause_random() -> u64 {
    thread_local!(static STATE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    STATE.with(|s| {
        let mut x = s.get() ^ clock ^ (u64::from(std::process::id()) << 32);
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        s.set(x);
        x
    })
}

/// Writes the layout version into an empty store; refuses a store with data
/// but no version, or another version. Processes opening a new store at once
/// race to write it: the ones that lose read the winner's.
pub(crate) fn init_format(backend: &dyn Backend) -> Result<()> {
    let mut attempt = 1;
    loop {
        match init_format_once(backend) {
            Err(Error::Store(e)) if e.kind() == ErrorKind::Conflict && attempt < CONFLICT_RETRIES => attempt += 1,
            other => return other,
        }
    }
}

pub(crate) fn init_format_once(backend: &dyn Backend) -> Result<()> {
    let snap = backend.snapshot()?;
    match snap.get(keys::FORMAT)? {
        Some(v) if v == keys::FORMAT_VERSION.to_be_bytes() => Ok(()),
        Some(v) => Err(canopy_store::StoreError::new(
            ErrorKind::Unsupported,
            format!(
                "{} store: layout version {}; this canopy reads version {}",
                backend.kind(),
                v.try_into().map(u32::from_be_bytes).map_or_else(|_| "?".into(), |n: u32| n.to_string()),
                keys::FORMAT_VERSION
            ),
        )
        .into()),
        None => {
            if snap.first_with_prefix(&[], false)?.is_some() {
                return Err(canopy_store::StoreError::corrupted(format!(
                    "{} store holds data but no canopy format record (not a canopy store?)",
                    backend.kind()
                ))
                .into());
            }
            let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
            batch.put(keys::FORMAT.to_vec(), keys::FORMAT_VERSION.to_be_bytes().to_vec());
            drop(snap);
            backend.apply(&batch)?;
            Ok(())
        }
    }
}

pub(crate) fn poisoned() -> Error {
    Error::Store(canopy_store::StoreError::new(ErrorKind::Unavailable, "store lock poisoned by a panic"))
}

impl Store {
    /// Opens the store a URL names (see [`crate::open::open_backend`]). The URL
    /// parameter `cache=on|off` selects the cached mode.
    ///
    /// # Errors
    /// Invalid URLs, backends not built in, and the backend's open errors.
    pub fn open(url: &str) -> Result<Store> {
        let mut parsed = StoreUrl::parse(url)?;
        let (cache, watch) = match parsed.params.remove("cache").as_deref() {
            None | Some("off") => (false, false),
            Some("on") => (true, false),
            Some("watch") => (true, true),
            Some(other) => {
                return Err(canopy_store::StoreError::new(
                    ErrorKind::InvalidUrl,
                    format!(
                        "invalid store URL `{}`: cache must be `on`, `watch` or `off`, not `{other}`",
                        parsed.redacted()
                    ),
                )
                .into())
            }
        };
        let changelog = match parsed.params.remove("changelog") {
            None => None,
            Some(n) => Some(n.parse::<u64>().map_err(|_| {
                canopy_store::StoreError::new(
                    ErrorKind::InvalidUrl,
                    format!(
                        "invalid store URL `{}`: changelog must be a number of commits (0 for none), not `{n}`",
                        parsed.redacted()
                    ),
                )
            })?),
        };
        Store::open_with(&parsed, Options { cache, watch, changelog })
    }

    /// Opens a store with explicit options.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with(url: &StoreUrl, options: Options) -> Result<Store> {
        let backend = crate::open::open_backend(url)?;
        // The store keeps (and shows) its URL without the password.
        Store::from_backend(backend, url.redacted(), options)
    }

    /// Wraps an already open backend.
    ///
    /// # Errors
    /// Errors reading the store's learned list info.
    pub fn from_backend(backend: Box<dyn Backend>, url: &str, options: Options) -> Result<Store> {
        init_format(&*backend)?;
        let hub = crate::hub::hub_for(url);
        {
            let snap = backend.snapshot()?;
            let control = Control::load(&*snap)?;
            // Pushed state of ended connections is collected; best effort (a
            // read-only store keeps it, and readers skip it anyway).
            let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
            if let Ok(live) = control.live(&*backend, &hub) {
                live.collect_ended_pushers(&mut batch);
            }
            if !batch.is_empty() {
                drop(snap);
                let _ = backend.apply(&batch);
            }
        }
        let changelog = options.changelog.unwrap_or(if backend.announces() { DEFAULT_CHANGELOG } else { 0 });
        let (backend, watch) = match options.cache && options.watch {
            true => Watch::start(backend),
            false => (Arc::from(backend), None),
        };
        let store = Store {
            backend,
            changelog,
            url: url.to_string(),
            catalog: Catalogs::new(),
            writer: Mutex::new(()),
            cache: options.cache.then(|| RwLock::new(HashMap::new())),
            watch,
            cache_mode: match (options.cache, options.watch) {
                (false, _) => "off",
                (true, false) => "on",
                (true, true) => "watch",
            },
            conn: Conn::new(),
            locking: std::sync::atomic::AtomicBool::new(false),
            hub,
        };
        // Learned lists and the YANG schema are read (and checked) at open.
        store.catalog_at(&*store.backend.snapshot()?)?;
        Ok(store)
    }

    /// The URL the store was opened with (its password, if any, as `***`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the store keeps each datastore's tree in memory (`cache=on`
    /// or `cache=watch`).
    pub fn is_cached(&self) -> bool {
        self.cache.is_some()
    }

    /// The cache mode as the URL names it: `off`, `on`, or `watch` (cached
    /// reads trust the commits the backend announces).
    /// On a backend that announces nothing, `watch` reads as `on` does.
    pub fn cache_mode(&self) -> &'static str {
        self.cache_mode
    }

    /// The backend behind the store.
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// The backend behind the store, shared: for key ranges of its own beside
    /// the store's (see [`canopy_store::prefixed::Prefixed`]).
    pub fn shared_backend(&self) -> Arc<dyn Backend> {
        self.backend.clone()
    }

    /// A session on a datastore.
    pub fn session(&self, ds: Datastore) -> Session<'_> {
        Session { store: self, ds, stored: false }
    }

    /// A session on `running`.
    pub fn running(&self) -> Session<'_> {
        self.session(Datastore::Running)
    }

    /// The current revision, read from the backend. With `cache=watch` the
    /// store hears it too: its reads after this one are at least at it.
    ///
    /// # Errors
    /// Backend read errors.
    pub fn revision(&self) -> Result<u64> {
        let revision = self.backend.revision()?;
        if let Some(w) = &self.watch {
            w.hear(revision);
        }
        Ok(revision)
    }

    /// The catalog of `snap`'s revision: lists, YANG schema, locks and the
    /// candidate's state as that revision holds them.
    pub(crate) fn catalog_at(&self, snap: &dyn Snapshot) -> Result<Arc<Catalog>> {
        self.catalog.at(snap)
    }

    /// The lists known at `snap`'s revision (learned, declared, the YANG schema's).
    pub(crate) fn schema_at(&self, snap: &dyn Snapshot) -> Result<Arc<Schemaless>> {
        Ok(self.catalog.at(snap)?.lists.clone())
    }

    /// Locks and the candidate's state at `snap`'s revision.
    pub(crate) fn control_at(&self, snap: &dyn Snapshot) -> Result<Arc<Control>> {
        Ok(self.catalog.at(snap)?.control.clone())
    }

    /// The learned list info of the current revision.
    pub(crate) fn schema_now(&self) -> Result<Arc<Schemaless>> {
        let snap = self.backend.snapshot()?;
        self.schema_at(&*snap)
    }

    /// The lists the store knows now, by schema path (`/m:cont/lst`): the YANG
    /// schema's, declared and learned ones, with their keys and ordering.
    ///
    /// # Errors
    /// Backend errors.
    pub fn known_lists(&self) -> Result<Arc<Schemaless>> {
        self.schema_now()
    }

    /// Declares a list's keys and ordering before data is imported (a schema
    /// would say this; schemaless stores learn it here or from the first path
    /// that creates an entry). Declaring what is already known does nothing.
    ///
    /// # Errors
    /// [`Error::Usage`] when the list is known with other keys or ordering.
    pub fn declare_list(&self, schema_path: &str, info: ListInfo) -> Result<()> {
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        if !self.declaration_needed(schema_path, &info)? {
            return Ok(());
        }
        let snap = self.backend.snapshot()?;
        let mut k = keys::LIST_INFO.to_vec();
        k.extend_from_slice(schema_path.as_bytes());
        let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
        batch.put(k, keys::encode_list_info(&info));
        drop(snap);
        self.backend.apply(&batch)?;
        Ok(())
    }

    /// Whether declaring `info` for the list at `schema_path` records anything
    /// (`false`: known as declared).
    ///
    /// # Errors
    /// As [`Store::declare_list`].
    pub(crate) fn declaration_needed(&self, schema_path: &str, info: &ListInfo) -> Result<bool> {
        let known = {
            let snap = self.backend.snapshot()?;
            self.schema_at(&*snap)?.list_info(schema_path)
        };
        match known {
            Some(known) if known == *info => return Ok(false),
            // Recorded keyless (imported before its keys were declared): keys
            // may be declared once no datastore holds entries stored without them.
            Some(known) if known.keys.is_empty() => {
                for ds in Datastore::ALL {
                    if self.session(ds).count(schema_path)? > 0 {
                        return Err(Error::Usage(format!(
                            "list {schema_path} holds entries stored without keys (in {}, imported before its keys \
                             were declared); delete them before declaring its keys",
                            ds.name()
                        )));
                    }
                }
            }
            Some(known) => {
                return Err(Error::Usage(format!(
                    "list {schema_path} already has keys {:?}{}; declared keys cannot change",
                    known.keys,
                    if known.user_ordered { " (ordered by user)" } else { "" }
                )))
            }
            None => {}
        }
        Ok(true)
    }

    /// Rewrites the store so that space freed by deletes returns to the filesystem.
    ///
    /// # Errors
    /// Backend errors; the store is unchanged when compaction fails.
    pub fn compact(&self) -> Result<()> {
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        Ok(self.backend.compact()?)
    }

    /// Verifies the store: every key and fragment decodes, every fragment has
    /// its parent, user-ordered entries and the order index agree, and the
    /// backend's own check passes. Returns the problems found (empty: healthy).
    ///
    /// # Errors
    /// Errors that stop the check itself (the store cannot be read at all).
    pub fn check(&self) -> Result<Vec<String>> {
        self.check_with_progress(&mut |_| {})
    }

    /// [`Store::check`], telling `progress` how many records it has read so
    /// far, every few thousand (compare with `backend().approx_len()`).
    ///
    /// # Errors
    /// As [`Store::check`].
    pub fn check_with_progress(&self, progress: &mut dyn FnMut(u64)) -> Result<Vec<String>> {
        let yang_lists = match self.yang_schema() {
            Ok(y) => Ok(y.map(|y| y.lists()).unwrap_or_default()),
            Err(e) => Err(e.to_string()),
        };
        crate::check::check(self.backend(), yang_lists, progress)
    }

    /// After a commit at `revision` on top of the catalog held: the lists
    /// and control records it leaves, where it changed them.
    pub(crate) fn catalog_committed(
        &self,
        base: u64,
        revision: u64,
        lists: Option<Schemaless>,
        control: Option<Control>,
    ) {
        self.catalog.committed(base, revision, lists, control);
    }
}
