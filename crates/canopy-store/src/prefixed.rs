//! A backend that is a key range of another: every key is stored under a
//! fixed prefix, so several stores (ONAP CPS anchors, for one) share one
//! backend, each in a range of its own.
//!
//! The revision is the shared backend's: a commit through any prefix advances
//! it. The revision record of the shared backend is never under a prefix,
//! because prefixes must not be empty and must not start with `0x00`.

use std::sync::Arc;

use crate::backend::{prefix_end, Backend, Batch, BatchOp, Snapshot, SyncMode, Visit, WriteView};
use crate::error::Result;

/// The keys of `inner` that start with `prefix`, seen without it.
pub struct Prefixed {
    inner: Arc<dyn Backend>,
    prefix: Vec<u8>,
}

impl Prefixed {
    /// # Panics
    /// When `prefix` is empty or starts with `0x00` (the shared store's own records).
    pub fn new(inner: Arc<dyn Backend>, prefix: Vec<u8>) -> Prefixed {
        assert!(prefix.first().is_some_and(|b| *b != 0), "a prefix must be non-empty and not start with 0x00");
        Prefixed { inner, prefix }
    }

    fn batch(&self, batch: &Batch) -> Batch {
        let ops = batch
            .ops
            .iter()
            .map(|op| match op {
                BatchOp::Put(k, v) => BatchOp::Put(self.key(k), v.clone()),
                BatchOp::Delete(k) => BatchOp::Delete(self.key(k)),
                BatchOp::DeletePrefix(p) => BatchOp::DeletePrefix(self.key(p)),
            })
            .collect();
        Batch { expect_revision: batch.expect_revision, ops }
    }

    fn key(&self, k: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + k.len());
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(k);
        out
    }
}

struct View<'a, S: ?Sized> {
    inner: Box<S>,
    prefix: &'a [u8],
    owner: &'a Prefixed,
}

fn scan_in<S: Snapshot + ?Sized>(
    snap: &S,
    prefix: &[u8],
    start: &[u8],
    end: Option<&[u8]>,
    reverse: bool,
    visit: &mut Visit<'_>,
) -> Result<()> {
    let mut s = prefix.to_vec();
    s.extend_from_slice(start);
    let e = match end {
        Some(e) => {
            let mut v = prefix.to_vec();
            v.extend_from_slice(e);
            Some(v)
        }
        None => prefix_end(prefix),
    };
    let n = prefix.len();
    snap.scan(&s, e.as_deref(), reverse, &mut |k, v| visit(&k[n..], v))
}

impl<S: Snapshot + ?Sized> Snapshot for View<'_, S> {
    fn revision(&self) -> u64 {
        self.inner.revision()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(&self.owner.key(key))
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let owned: Vec<Vec<u8>> = keys.iter().map(|k| self.owner.key(k)).collect();
        let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        self.inner.get_many(&refs)
    }

    fn remote(&self) -> bool {
        self.inner.remote()
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        scan_in(&*self.inner, self.prefix, start, end, reverse, visit)
    }
}

impl<'a> WriteView for View<'a, dyn WriteView + 'a> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let batch = self.owner.batch(batch);
        self.inner.commit(&batch)
    }
}

impl Backend for Prefixed {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        Ok(Box::new(View { inner: self.inner.snapshot()?, prefix: &self.prefix, owner: self }))
    }

    fn brief_snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        Ok(Box::new(View { inner: self.inner.brief_snapshot()?, prefix: &self.prefix, owner: self }))
    }

    fn takes_revisions(&self) -> bool {
        self.inner.takes_revisions()
    }

    fn brief_snapshot_at(&self, revision: u64) -> Result<Box<dyn Snapshot + '_>> {
        Ok(Box::new(View { inner: self.inner.brief_snapshot_at(revision)?, prefix: &self.prefix, owner: self }))
    }

    fn revision(&self) -> Result<u64> {
        self.inner.revision()
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        self.inner.apply(&self.batch(batch))
    }

    fn apply_unflushed(&self, batch: &Batch) -> Result<u64> {
        self.inner.apply_unflushed(&self.batch(batch))
    }

    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(View { inner: self.inner.begin_write()?, prefix: &self.prefix, owner: self }))
    }

    fn begin_write_at(&self, revision: u64) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(View { inner: self.inner.begin_write_at(revision)?, prefix: &self.prefix, owner: self }))
    }

    fn sync_mode(&self) -> SyncMode {
        self.inner.sync_mode()
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryBackend;

    #[test]
    fn prefixes_keep_their_keys_apart() {
        let shared: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let a = Prefixed::new(shared.clone(), b"\x40a\x00".to_vec());
        let b = Prefixed::new(shared.clone(), b"\x40b\x00".to_vec());
        let mut batch = Batch::default();
        batch.put(b"k1".to_vec(), b"1".to_vec());
        batch.put(b"k2".to_vec(), b"2".to_vec());
        a.apply(&batch).unwrap();
        b.apply(&batch).unwrap();
        let mut del = Batch::default();
        del.delete_prefix(b"k".to_vec());
        a.apply(&del).unwrap();
        assert_eq!(a.snapshot().unwrap().get(b"k1").unwrap(), None);
        let mut seen = Vec::new();
        b.snapshot()
            .unwrap()
            .scan(&[], None, false, &mut |k, _| {
                seen.push(k.to_vec());
                Ok(true)
            })
            .unwrap();
        assert_eq!(seen, vec![b"k1".to_vec(), b"k2".to_vec()]);
        assert_eq!(a.snapshot().unwrap().revision(), 3);
    }
}
