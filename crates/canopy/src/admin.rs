//! Whole-store operations: what a store holds, and copying a store to another
//! backend.

use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, ErrorKind, Snapshot, StoreError, SyncMode};

use crate::error::{Error, Result};
use crate::store::Store;

/// Pairs per batch written by [`copy`]: bounds the memory a copy holds.
pub const COPY_BATCH: usize = 10_000;

/// What a store is and holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreInfo {
    /// The backend's name (`lmdb`, `sqlite`, `memory`).
    pub backend: &'static str,
    pub revision: u64,
    /// Fragments (containers and list entries) of all datastores.
    pub fragments: u64,
    /// Bytes the backend's files occupy (0 in memory).
    pub disk_bytes: u64,
    pub sync: SyncMode,
}

/// What [`copy`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyReport {
    /// Keys copied: every key of the source but its revision record.
    pub keys: u64,
    /// Of those, fragments (containers and list entries).
    pub fragments: u64,
    /// Batches applied to the destination.
    pub batches: u64,
    /// The revision of the source snapshot that was copied.
    pub source_revision: u64,
    /// The destination's revision after the copy.
    pub revision: u64,
}

fn count_fragments(snap: &dyn Snapshot) -> Result<u64> {
    let mut n = 0;
    for ds in Datastore::ALL {
        snap.scan_prefix(&keys::data_prefix(ds), false, &mut |_, _| {
            n += 1;
            Ok(true)
        })?;
    }
    Ok(n)
}

/// Keys of a snapshot other than the revision record (which each backend keeps).
fn count_keys(snap: &dyn Snapshot) -> Result<u64> {
    let mut n = 0;
    snap.scan(&[], None, false, &mut |k, _| {
        n += u64::from(k != keys::REVISION);
        Ok(true)
    })?;
    Ok(n)
}

impl Store {
    /// The backend, revision, fragment count, size on disk and sync mode.
    ///
    /// # Errors
    /// Backend read errors.
    pub fn info(&self) -> Result<StoreInfo> {
        let backend = self.backend();
        let snap = backend.snapshot()?;
        Ok(StoreInfo {
            backend: backend.kind(),
            revision: snap.revision(),
            fragments: count_fragments(&*snap)?,
            disk_bytes: backend.disk_size()?,
            sync: backend.sync_mode(),
        })
    }
}

/// Copies everything in `from` (as of one snapshot) into `to`, which must be
/// empty, streaming in batches of [`COPY_BATCH`] pairs, then checks that `to`
/// holds as many keys as were copied.
///
/// The revision record is not copied: a revision counts the batches of one
/// store (readers and writers compare it with what they saw of that store), so
/// the destination keeps counting its own, and ends at the number of batches
/// the copy applied (plus any it had).
///
/// Each batch expects the revision the previous one left, so a writer that
/// touches the destination during the copy makes it fail with `Conflict`
/// rather than interleave. A failed copy leaves the batches applied so far;
/// the destination is then not empty and must be removed before trying again.
///
/// # Errors
/// [`Error::Usage`] when `to` holds data; backend errors of either store; a
/// `Corrupted` error when the destination's count differs after the copy.
pub fn copy(from: &Store, to: &Store) -> Result<CopyReport> {
    copy_with_progress(from, to, &mut |_| {})
}

/// [`copy`], telling `progress` the keys copied so far after every batch
/// (compare with `from.backend().approx_len()` for a total).
///
/// # Errors
/// As [`copy`].
pub fn copy_with_progress(from: &Store, to: &Store, progress: &mut dyn FnMut(u64)) -> Result<CopyReport> {
    let start = to.backend().snapshot()?;
    let mut holds_data = false;
    start.scan(&[], None, false, &mut |k, _| {
        holds_data = k != keys::FORMAT && k != keys::REVISION;
        Ok(!holds_data)
    })?;
    if holds_data {
        return Err(Error::Usage(format!("cannot copy into {}: it is not empty", to.url())));
    }
    let mut batch = Batch { expect_revision: Some(start.revision()), ops: Vec::with_capacity(COPY_BATCH) };
    drop(start);

    let source = from.backend().snapshot()?;
    let mut report = CopyReport { keys: 0, fragments: 0, batches: 0, source_revision: source.revision(), revision: 0 };
    let fragment_prefixes = Datastore::ALL.map(keys::data_prefix);
    let flush = |batch: &mut Batch, report: &mut CopyReport| -> canopy_store::Result<()> {
        let rev = to.backend().apply(batch)?;
        batch.ops.clear();
        batch.expect_revision = Some(rev);
        report.batches += 1;
        report.revision = rev;
        Ok(())
    };
    source.scan(&[], None, false, &mut |k, v| {
        // Pushed state belongs to the source's connections, its change log
        // to the source's revisions: they are not copied.
        if k == keys::REVISION || k.starts_with(keys::PUSHER) || k.starts_with(keys::PUSHED) || k.starts_with(keys::LOG)
        {
            return Ok(true);
        }
        batch.put(k.to_vec(), v.to_vec());
        report.keys += 1;
        report.fragments += u64::from(fragment_prefixes.iter().any(|p| k.starts_with(p)));
        if batch.ops.len() == COPY_BATCH {
            flush(&mut batch, &mut report)?;
            progress(report.keys);
        }
        Ok(true)
    })?;
    if !batch.is_empty() {
        flush(&mut batch, &mut report)?;
    }
    progress(report.keys);
    drop(source);

    let written = count_keys(&*to.backend().snapshot()?)?;
    if written != report.keys {
        return Err(StoreError::new(
            ErrorKind::Corrupted,
            format!("copy to {}: copied {} keys but the destination holds {written}", to.url(), report.keys),
        )
        .into());
    }
    Ok(report)
}
