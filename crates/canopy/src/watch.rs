//! The store's revision as a store hears it, for cached reads that need no
//! round trip to a database server.
//!
//! With `cache=watch` on a backend that announces commits (the server
//! backends), a thread of the store listens to the announcements and keeps
//! the newest revision heard; every commit made through the store's backend
//! raises it as it returns ([`Heeded`]). A cached read whose tree and
//! catalog are at that revision is answered from memory, without a
//! snapshot. A commit of another process (or of another store on the same
//! URL) is then seen once its announcement arrives (on loopback well under
//! the 10 ms the design allows), and the store's own commits at once.
//!
//! What is heard is only trusted while it is known to be complete: the
//! listening connection must be up, and a revision read over another
//! connection (once a [`HEARTBEAT`]) must not stay ahead of what was heard.
//! After an error, a lost announcement or a heartbeat older than
//! [`TRUSTED_FOR`], every cached read reads the revision again, as without a
//! watch, until the connection is back and a revision read after it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use canopy_store::backend::{BulkWrite, Visit, WriteView};
use canopy_store::lease::Lease;
use canopy_store::{Announcements, Backend, Batch, BatchOp, Result, Snapshot, SyncMode};

/// How often the watch reads the revision to check that it heard every commit.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long after its last good heartbeat what the watch heard is trusted
/// (a server that stopped answering stops being trusted within this).
const TRUSTED_FOR: Duration = Duration::from_secs(3);
/// The wait before connecting again after a failure.
const RETRY: Duration = Duration::from_millis(200);

/// The newest revision of the store heard of, while it can be trusted.
pub(crate) struct Watch {
    state: Arc<State>,
}

struct State {
    /// The newest revision announced, read or committed by this process.
    heard: AtomicU64,
    /// Whether the listening connection is up and was up when the
    /// revision was last read.
    live: AtomicBool,
    /// When the revision was last read and found heard (ms since `epoch`).
    confirmed_ms: AtomicU64,
    epoch: Instant,
    /// Set when the store is dropped: the thread ends.
    stop: AtomicBool,
}

impl State {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Watch {
    /// Starts watching `backend`'s announcements, and returns the backend
    /// the store is to use: `backend` with every commit made through it
    /// heard at once (whatever writes it: a transaction, a lock, a schema
    /// change, a copy). `None` for the watch when the backend announces
    /// nothing or the thread cannot start (cached reads then read the
    /// revision, and `backend` is returned as it is).
    pub(crate) fn start(backend: Box<dyn Backend>) -> (Arc<dyn Backend>, Option<Watch>) {
        if !backend.announces() {
            return (Arc::from(backend), None);
        }
        let state = Arc::new(State {
            heard: AtomicU64::new(0),
            live: AtomicBool::new(false),
            confirmed_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            stop: AtomicBool::new(false),
        });
        let heeded: Arc<dyn Backend> = Arc::new(Heeded { inner: backend, state: state.clone() });
        let listener = Listener { state: state.clone(), backend: Arc::downgrade(&heeded), announcements: None };
        match std::thread::Builder::new().name("canopy-watch".into()).spawn(move || listener.run()) {
            Ok(_) => (heeded, Some(Watch { state })),
            Err(_) => (heeded, None),
        }
    }

    /// The store's revision as last heard, when what is heard can be
    /// trusted; `None` when a read must ask the backend.
    pub(crate) fn revision(&self) -> Option<u64> {
        let s = &*self.state;
        if !s.live.load(Ordering::Acquire) {
            return None;
        }
        let confirmed = s.confirmed_ms.load(Ordering::Acquire);
        if s.now_ms().saturating_sub(confirmed) > TRUSTED_FOR.as_millis() as u64 {
            return None;
        }
        Some(s.heard.load(Ordering::Acquire))
    }
}

impl Watch {
    /// Hears `revision`, read from the backend by the store: a revision the
    /// store is known to have reached.
    pub(crate) fn hear(&self, revision: u64) {
        self.state.heard.fetch_max(revision, Ordering::AcqRel);
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Release);
    }
}

struct Listener {
    state: Arc<State>,
    backend: Weak<dyn Backend>,
    announcements: Option<Box<dyn Announcements>>,
}

impl Listener {
    fn run(mut self) {
        let s = self.state.clone();
        // The newest revision announced on this connection, and a revision
        // read above it: still not announced by the next heartbeat, an
        // announcement was lost (every commit is announced, this process's
        // own too).
        let mut announced = 0;
        let mut unheard: Option<u64> = None;
        let mut last_read = Instant::now();
        while !s.stop.load(Ordering::Acquire) {
            if self.announcements.is_none() {
                s.live.store(false, Ordering::Release);
                unheard = None;
                // Commits up to the revision read at connecting are not announced.
                let Some(now) = self.connect() else {
                    std::thread::sleep(RETRY);
                    continue;
                };
                announced = now;
                last_read = Instant::now();
            }
            let mut read_now = last_read.elapsed() >= HEARTBEAT;
            let mut unsaid = false;
            match self.announcements.as_mut().map(|a| a.next(HEARTBEAT.saturating_sub(last_read.elapsed()))) {
                // A commit whose revision the message did not say.
                Some(Ok(Some(u64::MAX))) => (read_now, unsaid) = (true, true),
                Some(Ok(Some(r))) => {
                    announced = announced.max(r);
                    s.heard.fetch_max(r, Ordering::AcqRel);
                }
                Some(Ok(None)) => read_now = true,
                Some(Err(_)) | None => {
                    self.lose();
                    continue;
                }
            }
            if !read_now {
                continue;
            }
            let Some(now) = self.read_revision() else {
                self.lose();
                std::thread::sleep(RETRY);
                continue;
            };
            last_read = Instant::now();
            s.heard.fetch_max(now, Ordering::AcqRel);
            if unsaid {
                announced = announced.max(now);
            }
            if unheard.is_some_and(|r| announced < r) {
                // Announced commits went missing: listen again.
                self.lose();
                continue;
            }
            unheard = (now > announced).then_some(now);
            s.confirmed_ms.store(s.now_ms(), Ordering::Release);
        }
    }

    /// Listens again, then reads the revision (commits after that read are
    /// announced) and returns it: `None` when either fails.
    fn connect(&mut self) -> Option<u64> {
        let Some(backend) = self.backend.upgrade() else {
            self.state.stop.store(true, Ordering::Release);
            return None;
        };
        let a = backend.announcements().ok()?;
        drop(backend);
        self.announcements = Some(a);
        let Some(now) = self.read_revision() else {
            self.announcements = None;
            return None;
        };
        let s = &*self.state;
        s.heard.fetch_max(now, Ordering::AcqRel);
        s.confirmed_ms.store(s.now_ms(), Ordering::Release);
        s.live.store(true, Ordering::Release);
        Some(now)
    }

    /// The revision read alone (on Redis one `GET`), not through a snapshot.
    fn read_revision(&self) -> Option<u64> {
        let backend = self.backend.upgrade()?;
        let revision = backend.revision().ok()?;
        Some(revision)
    }

    fn lose(&mut self) {
        self.state.live.store(false, Ordering::Release);
        self.announcements = None;
    }
}

/// A backend whose commits raise the revision heard as they return: the
/// store's own commits are read at once, whichever code path made them.
struct Heeded {
    inner: Box<dyn Backend>,
    state: Arc<State>,
}

impl Heeded {
    fn heard(state: &State, committed: Result<u64>) -> Result<u64> {
        if let Ok(r) = &committed {
            state.heard.fetch_max(*r, Ordering::AcqRel);
        }
        committed
    }
}

/// A write view of [`Heeded`]: its commit is heard.
struct HeededView<'a> {
    inner: Box<dyn WriteView + 'a>,
    state: &'a State,
}

impl Snapshot for HeededView<'_> {
    fn revision(&self) -> u64 {
        self.inner.revision()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.inner.get_many(keys)
    }

    fn remote(&self) -> bool {
        self.inner.remote()
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        self.inner.scan(start, end, reverse, visit)
    }
}

impl WriteView for HeededView<'_> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let HeededView { inner, state } = *self;
        Heeded::heard(state, inner.commit(batch))
    }
}

/// A bulk write of [`Heeded`]: its commit is heard.
struct HeededBulk {
    inner: Box<dyn BulkWrite>,
    state: Arc<State>,
}

impl BulkWrite for HeededBulk {
    fn write(&mut self, part: Vec<BatchOp>) -> Result<()> {
        self.inner.write(part)
    }

    fn commit(self: Box<Self>) -> Result<u64> {
        let HeededBulk { inner, state } = *self;
        Heeded::heard(&state, inner.commit())
    }
}

impl Backend for Heeded {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.inner.snapshot()
    }

    fn brief_snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.inner.brief_snapshot()
    }

    fn takes_revisions(&self) -> bool {
        self.inner.takes_revisions()
    }

    fn brief_snapshot_at(&self, revision: u64) -> Result<Box<dyn Snapshot + '_>> {
        self.inner.brief_snapshot_at(revision)
    }

    fn revision(&self) -> Result<u64> {
        self.inner.revision()
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        Heeded::heard(&self.state, self.inner.apply(batch))
    }

    fn apply_unflushed(&self, batch: &Batch) -> Result<u64> {
        Heeded::heard(&self.state, self.inner.apply_unflushed(batch))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(HeededView { inner: self.inner.begin_write()?, state: &self.state }))
    }

    fn begin_write_at(&self, revision: u64) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(HeededView { inner: self.inner.begin_write_at(revision)?, state: &self.state }))
    }

    fn begin_bulk(&self, expect_revision: u64) -> Result<Option<Box<dyn BulkWrite>>> {
        Ok(self
            .inner
            .begin_bulk(expect_revision)?
            .map(|inner| -> Box<dyn BulkWrite> { Box::new(HeededBulk { inner, state: self.state.clone() }) }))
    }

    fn bulk_writes(&self) -> bool {
        self.inner.bulk_writes()
    }

    fn sync_mode(&self) -> SyncMode {
        self.inner.sync_mode()
    }

    fn disk_size(&self) -> Result<u64> {
        self.inner.disk_size()
    }

    fn approx_len(&self) -> Result<Option<u64>> {
        self.inner.approx_len()
    }

    fn compact(&self) -> Result<()> {
        self.inner.compact()
    }

    fn check(&self) -> Result<Vec<String>> {
        self.inner.check()
    }

    fn announces(&self) -> bool {
        self.inner.announces()
    }

    fn announcements(&self) -> Result<Box<dyn Announcements>> {
        self.inner.announcements()
    }

    fn leases(&self) -> bool {
        self.inner.leases()
    }

    fn lease(&self) -> Result<Box<dyn Lease>> {
        self.inner.lease()
    }

    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        self.inner.leases_held(ids)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
}
