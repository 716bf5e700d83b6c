//! Bulk writes ([`canopy_store::BulkWrite`]): one LMDB write transaction
//! that takes its writes part by part, so that a bulk import is never held
//! whole as a batch besides the pages LMDB dirties.
//!
//! The transaction lives on a thread of its own (an LMDB write transaction
//! must stay on the thread that began it), which applies the parts it is
//! sent while the caller produces the next ones; a bounded channel keeps at
//! most a few parts in flight. The thread holds the environment shared and
//! this process's write gate from the first part to the commit, as
//! [`Shared::apply`] does for one batch.
//!
//! A transaction cannot grow the map (LMDB resizes only with no transaction
//! open, and a batch that does not fit is applied again after a resize, which
//! parts already consumed cannot be). So the map is first made to have
//! [`RESERVE`] bytes free beyond the file: only address space, the file
//! grows as pages are written. A bulk write larger than that fails with
//! `Unsupported` and stores nothing. When the map must grow while this
//! process has a snapshot open (resizing waits for none to be), there is no
//! bulk write: the caller gathers a batch.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use canopy_store::backend::{BatchOp, BulkWrite};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::keys::REVISION;
use heed::MdbError;

use crate::{lmdb_err, lower_bound, opened, page_round, poisoned, read_revision, Shared};

/// Free map space a bulk write makes sure of before it begins.
#[cfg(target_pointer_width = "64")]
const RESERVE: usize = 16 << 30;
#[cfg(not(target_pointer_width = "64"))]
const RESERVE: usize = 512 << 20;

/// Parts sent and not yet applied, at most.
const IN_FLIGHT: usize = 2;

enum Msg {
    Part(Vec<BatchOp>),
    Commit,
}

/// The handle the caller writes through.
pub(crate) struct LmdbBulk {
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<Result<u64>>>,
}

impl Shared {
    /// Grows the map so that at least `free` bytes are free beyond the file.
    /// `false` when it needs growing while this process has transactions
    /// open (a snapshot held elsewhere, or by the caller): then it is not
    /// waited for.
    fn reserve(&self, free: usize) -> Result<bool> {
        let used = std::fs::metadata(&self.data_file).map_or(0, |m| m.len() as usize);
        let wanted = used.saturating_add(free);
        {
            let g = self.read()?;
            if opened(&g, &self.dir)?.env.info().map_size >= wanted {
                return Ok(true);
            }
        }
        let Ok(g) = self.inner.try_write() else { return Ok(false) };
        let inner = opened(&g, &self.dir)?;
        // SAFETY: we hold the exclusive lock, so no transaction of this process is open.
        unsafe { inner.env.resize(page_round(wanted)) }.map_err(|e| lmdb_err(&self.dir, "resize the map", e))?;
        Ok(true)
    }
}

/// Begins a bulk write on `shared` on top of revision `expect`; `None` when
/// the map cannot be made large enough now (see [`Shared::reserve`]).
pub(crate) fn begin(shared: &Arc<Shared>, expect: u64) -> Result<Option<Box<dyn BulkWrite>>> {
    if !shared.reserve(RESERVE)? {
        return Ok(None);
    }
    let (tx, rx) = sync_channel(IN_FLIGHT);
    let (ready_tx, ready_rx) = sync_channel(1);
    let s = shared.clone();
    let thread = std::thread::Builder::new()
        .name("canopy-lmdb-bulk".into())
        .spawn(move || run(&s, expect, &rx, &ready_tx))
        .map_err(|e| StoreError::io("lmdb: starting the bulk writer", e))?;
    let mut bulk = LmdbBulk { tx: Some(tx), thread: Some(thread) };
    match ready_rx.recv() {
        Ok(()) => Ok(Some(Box::new(bulk))),
        // The thread ended before its transaction began: its error says why.
        Err(_) => Err(bulk.outcome()),
    }
}

impl LmdbBulk {
    /// The thread's error, once it ended without committing.
    fn outcome(&mut self) -> StoreError {
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            Some(Ok(Ok(_))) | None => StoreError::new(ErrorKind::Unavailable, "lmdb: the bulk writer ended early"),
            Some(Err(_)) => poisoned(),
        }
    }
}

impl BulkWrite for LmdbBulk {
    fn write(&mut self, part: Vec<BatchOp>) -> Result<()> {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(Msg::Part(part)).is_ok());
        match sent {
            true => Ok(()),
            false => Err(self.outcome()),
        }
    }

    fn commit(mut self: Box<Self>) -> Result<u64> {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(Msg::Commit).is_ok());
        self.tx = None;
        match (sent, self.thread.take().map(JoinHandle::join)) {
            (_, Some(Ok(r))) => r,
            (_, Some(Err(_))) => Err(poisoned()),
            (_, None) => Err(StoreError::new(ErrorKind::Unavailable, "lmdb: the bulk writer ended early")),
        }
    }
}

impl Drop for LmdbBulk {
    fn drop(&mut self) {
        // Closing the channel without a commit aborts the transaction.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The bulk writer's thread: one write transaction, the parts it is sent,
/// and the commit (or, the channel closed without one, nothing).
fn run(shared: &Shared, expect: u64, rx: &Receiver<Msg>, ready: &SyncSender<()>) -> Result<u64> {
    let dir = &shared.dir;
    let g = shared.read()?;
    let inner = opened(&g, dir)?;
    let _gate = shared.write_gate.lock().map_err(|_| poisoned())?;
    let mut wtxn = inner.env.write_txn().map_err(|e| lmdb_err(dir, "begin a write", e))?;
    let rev = read_revision(&inner.db, &wtxn).map_err(|e| lmdb_err(dir, "read the revision", e))?;
    if rev != expect {
        return Err(StoreError::stale_batch(expect, rev));
    }
    let _ = ready.send(());
    let too_big = || {
        StoreError::new(
            ErrorKind::Unsupported,
            format!(
                "lmdb store {}: the bulk write needs more than the {} GiB of map it reserves; nothing was stored",
                dir.display(),
                RESERVE >> 30
            ),
        )
    };
    let fail = |e: heed::Error| match e {
        heed::Error::Mdb(MdbError::MapFull) => too_big(),
        e => lmdb_err(dir, "write", e),
    };
    loop {
        match rx.recv() {
            Ok(Msg::Part(ops)) => {
                for op in ops {
                    match op {
                        BatchOp::Put(k, v) => inner.db.put(&mut wtxn, &k, &v).map_err(fail)?,
                        BatchOp::Delete(k) => {
                            inner.db.delete(&mut wtxn, &k).map_err(fail)?;
                        }
                        BatchOp::DeletePrefix(p) => {
                            let end = canopy_store::backend::prefix_end(&p);
                            let hi = end.as_deref().map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
                            inner.db.delete_range(&mut wtxn, &(lower_bound(&p), hi)).map_err(fail)?;
                        }
                    }
                }
            }
            Ok(Msg::Commit) => break,
            // Dropped without a commit: the transaction is aborted.
            Err(_) => return Err(StoreError::new(ErrorKind::Unavailable, "lmdb: the bulk write was dropped")),
        }
    }
    inner.db.put(&mut wtxn, REVISION, &(rev + 1).to_be_bytes()).map_err(fail)?;
    // Flushed as the environment's sync mode says (NO_SYNC with `sync=off`).
    wtxn.commit().map_err(|e| lmdb_err(dir, "commit", e))?;
    Ok(rev + 1)
}
