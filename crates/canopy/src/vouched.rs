//! Views taken at a revision assumed without asking the backend (the newest
//! this store knows of: see `Backend::brief_snapshot_at` and
//! `Backend::begin_write_at`), and whether anything vouched for it: a read
//! through the view that succeeded, or its commit. Only that shows the store
//! was at that revision, so that what an operation decided from that
//! revision's catalog alone (locks, the YANG schema, who pushed state) held;
//! an operation nothing vouched for is made again, asking.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use canopy_store::backend::{Batch, Snapshot, Visit, WriteView};
use canopy_store::error::Result;

/// A snapshot or write view, and the flag its first successful read or
/// commit raises.
pub(crate) struct Vouched<S: ?Sized> {
    pub inner: Box<S>,
    pub seen: Arc<AtomicBool>,
}

impl<S: ?Sized> Vouched<S> {
    fn mark<T>(&self, r: Result<T>) -> Result<T> {
        if r.is_ok() {
            self.seen.store(true, Ordering::Relaxed);
        }
        r
    }
}

macro_rules! vouched_snapshot {
    ($view:ident) => {
        impl<'a> Snapshot for Vouched<dyn $view + 'a> {
            fn revision(&self) -> u64 {
                self.inner.revision()
            }

            fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
                self.mark(self.inner.get(key))
            }

            fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
                self.mark(self.inner.get_many(keys))
            }

            fn remote(&self) -> bool {
                self.inner.remote()
            }

            fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
                self.mark(self.inner.scan(start, end, reverse, visit))
            }

            fn scan_prefix(&self, prefix: &[u8], reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
                self.mark(self.inner.scan_prefix(prefix, reverse, visit))
            }

            fn first_with_prefix(&self, prefix: &[u8], reverse: bool) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
                self.mark(self.inner.first_with_prefix(prefix, reverse))
            }
        }
    };
}

vouched_snapshot!(Snapshot);
vouched_snapshot!(WriteView);

impl<'a> WriteView for Vouched<dyn WriteView + 'a> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let seen = self.seen.clone();
        let r = self.inner.commit(batch);
        if r.is_ok() {
            seen.store(true, Ordering::Relaxed);
        }
        r
    }
}
