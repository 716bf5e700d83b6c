//! A backend that counts what its snapshots read, around any other: tests
//! use it to show that work is proportional to the change, not to the store
//! (deleting one entry does not read the whole list).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::backend::{Backend, Batch, Snapshot, SyncMode, Visit, WriteView};
use crate::error::Result;

/// Keys read through a [`Metered`] backend's snapshots and write views.
#[derive(Debug, Default)]
pub struct Reads {
    /// Keys visited by scans.
    pub scanned: AtomicU64,
    /// Point lookups.
    pub gets: AtomicU64,
    /// Snapshots taken, brief ones too (write views not counted).
    pub snapshots: AtomicU64,
}

impl Reads {
    /// Keys scanned plus point lookups since the last reset.
    pub fn total(&self) -> u64 {
        self.scanned.load(Ordering::Relaxed) + self.gets.load(Ordering::Relaxed)
    }

    pub fn reset(&self) {
        self.scanned.store(0, Ordering::Relaxed);
        self.gets.store(0, Ordering::Relaxed);
        self.snapshots.store(0, Ordering::Relaxed);
    }
}

/// `inner`, counting the keys every read visits into `reads`.
pub struct Metered<B> {
    pub inner: B,
    pub reads: Arc<Reads>,
}

impl<B: Backend> Metered<B> {
    pub fn new(inner: B) -> (Metered<B>, Arc<Reads>) {
        let reads = Arc::new(Reads::default());
        (Metered { inner, reads: reads.clone() }, reads)
    }
}

struct Counted<'a, S: ?Sized> {
    inner: Box<S>,
    reads: &'a Reads,
}

impl<S: Snapshot + ?Sized> Snapshot for Counted<'_, S> {
    fn revision(&self) -> u64 {
        self.inner.revision()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.reads.gets.fetch_add(1, Ordering::Relaxed);
        self.inner.get(key)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.reads.gets.fetch_add(keys.len() as u64, Ordering::Relaxed);
        self.inner.get_many(keys)
    }

    fn remote(&self) -> bool {
        self.inner.remote()
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        self.inner.scan(start, end, reverse, &mut |k, v| {
            self.reads.scanned.fetch_add(1, Ordering::Relaxed);
            visit(k, v)
        })
    }
}

impl<S: WriteView + ?Sized> WriteView for Counted<'_, S> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        self.inner.commit(batch)
    }
}

impl<B: Backend> Backend for Metered<B> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.reads.snapshots.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Counted { inner: self.inner.snapshot()?, reads: &self.reads }))
    }

    fn brief_snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.reads.snapshots.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Counted { inner: self.inner.brief_snapshot()?, reads: &self.reads }))
    }

    fn takes_revisions(&self) -> bool {
        self.inner.takes_revisions()
    }

    fn brief_snapshot_at(&self, revision: u64) -> Result<Box<dyn Snapshot + '_>> {
        self.reads.snapshots.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(Counted { inner: self.inner.brief_snapshot_at(revision)?, reads: &self.reads }))
    }

    fn revision(&self) -> Result<u64> {
        self.inner.revision()
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        self.inner.apply(batch)
    }

    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(Counted { inner: self.inner.begin_write()?, reads: &self.reads }))
    }

    fn begin_write_at(&self, revision: u64) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(Counted { inner: self.inner.begin_write_at(revision)?, reads: &self.reads }))
    }

    fn sync_mode(&self) -> SyncMode {
        self.inner.sync_mode()
    }

    fn announces(&self) -> bool {
        self.inner.announces()
    }

    fn announcements(&self) -> Result<Box<dyn crate::Announcements>> {
        self.inner.announcements()
    }

    fn leases(&self) -> bool {
        self.inner.leases()
    }

    fn lease(&self) -> Result<Box<dyn crate::lease::Lease>> {
        self.inner.lease()
    }

    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        self.inner.leases_held(ids)
    }
}
