//! The configuration datastores beyond plain storage (RFC 8342, RFC 6241):
//! locks, the candidate (a copy of running until edited; `commit` and
//! `discard`) and copies between datastores.

use crate::connections::{discard_ops, leased, this_host, Control, Live, LockInfo};
use crate::error::{Error, Result};
use crate::read::ReadOptions;
use crate::store::Store;
use crate::subscribe;
use crate::transaction::Commit;
use canopy_core::edit::{Edit, Operation};
use canopy_core::path::Path;
use canopy_core::tree::Node;
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, ErrorKind, Snapshot};

impl Store {
    /// Fails with [`Error::Locked`] when another live connection holds `ds`'s lock.
    pub(crate) fn check_unlocked(&self, live: &Live, ds: Datastore) -> Result<()> {
        match live.holder(ds) {
            Some(c) if c != self.conn => Err(Error::Locked(format!(
                "{} is locked by {}; the transaction was not applied",
                ds.name(),
                c.describe(&self.conn)
            ))),
            _ => Ok(()),
        }
    }

    /// Locks `ds` for this connection (RFC 6241 `<lock>`): other connections,
    /// in this process or others, cannot change it until [`Store::unlock`], until
    /// this connection is dropped, or until its process ends. The candidate
    /// cannot be locked while it holds uncommitted changes.
    ///
    /// # Errors
    /// [`Error::Locked`] when a connection (this one included) holds the lock;
    /// [`Error::Usage`] for operational (state is not locked) or a modified candidate.
    pub fn lock(&self, ds: Datastore) -> Result<()> {
        if ds == Datastore::Operational {
            return Err(Error::Usage("operational cannot be locked: it is not configuration".into()));
        }
        // Set before trying: a lock stored whose reply was lost is released too.
        self.locking.store(true, std::sync::atomic::Ordering::Relaxed);
        self.control_write(|control, live, batch| {
            if let Some(c) = live.holder(ds) {
                return Err(Error::Locked(format!("{} is already locked by {}", ds.name(), c.describe(&self.conn))));
            }
            if ds == Datastore::Candidate && control.candidate_modified {
                return Err(Error::Usage(
                    "candidate holds uncommitted changes; commit or discard them before locking it".into(),
                ));
            }
            batch.put(keys::lock_key(ds), leased(self.conn, self.backend(), &self.hub)?.encode());
            Ok(())
        })
    }

    /// Releases this connection's lock on `ds`.
    ///
    /// # Errors
    /// [`Error::Usage`] when this connection does not hold it.
    pub fn unlock(&self, ds: Datastore) -> Result<()> {
        self.control_write(|_, live, batch| {
            if live.holder(ds) != Some(self.conn) {
                return Err(Error::Usage(format!("{} is not locked by this connection", ds.name())));
            }
            batch.delete(keys::lock_key(ds));
            Ok(())
        })
    }

    /// The datastore locks held by live connections.
    ///
    /// # Errors
    /// Backend read errors.
    pub fn locks(&self) -> Result<Vec<LockInfo>> {
        let snap = self.backend().snapshot()?;
        let live = self.control_at(&*snap)?.live_locks(self.backend(), &self.hub)?;
        Ok(Datastore::ALL
            .into_iter()
            .filter_map(|ds| {
                live.holder(ds).map(|c| LockInfo {
                    datastore: ds,
                    pid: c.pid,
                    other_host: c.host != this_host(),
                    mine: c == self.conn,
                })
            })
            .collect())
    }

    /// Whether the candidate holds changes that running does not have.
    ///
    /// # Errors
    /// Backend read errors.
    pub fn candidate_modified(&self) -> Result<bool> {
        let snap = self.backend().snapshot()?;
        Ok(self.control_at(&*snap)?.candidate_modified)
    }

    /// Runs a batch on the datastore records, built by `build` from the
    /// current ones; stale locks of ended connections are dropped on the way.
    fn control_write(&self, build: impl Fn(&Control, &Live, &mut Batch) -> Result<()>) -> Result<()> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| crate::store::poisoned())?;
        for _ in 0..crate::store::CONFLICT_RETRIES {
            let snap = self.backend().snapshot()?;
            let control = Control::load(&*snap)?;
            let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
            let live = control.live(self.backend(), &self.hub)?;
            for ds in &live.ended_locks {
                batch.delete(keys::lock_key(*ds));
            }
            live.collect_ended_pushers(&mut batch);
            build(&control, &live, &mut batch)?;
            drop(snap);
            match self.backend().apply(&batch) {
                Err(e) if e.kind() == ErrorKind::Conflict => continue,
                Err(e) => return Err(e.into()),
                Ok(_) => return Ok(()),
            }
        }
        Err(Error::Store(canopy_store::StoreError::new(ErrorKind::Conflict, "other writers kept committing first")))
    }

    /// Releases every lock this connection holds (when it closes).
    pub(crate) fn release_locks(&self) {
        let held = |c: &Control| c.locks.iter().any(|(_, h)| *h == self.conn);
        let Ok(snap) = self.backend().snapshot() else { return };
        if !Control::load(&*snap).map(|c| held(&c)).unwrap_or(false) {
            return;
        }
        drop(snap);
        let _ = self.control_write(|control, _, batch| {
            for (ds, c) in &control.locks {
                if *c == self.conn {
                    batch.delete(keys::lock_key(*ds));
                }
            }
            Ok(())
        });
    }

    /// Gives the candidate its own contents (a copy of running) before its
    /// first edit. Returns the revision it made.
    pub(crate) fn materialize_candidate(&self, snap: &dyn Snapshot) -> Result<u64> {
        let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
        for (from, to) in [
            (keys::data_prefix(Datastore::Running), keys::data_prefix(Datastore::Candidate)),
            (keys::order_prefix(Datastore::Running), keys::order_prefix(Datastore::Candidate)),
            (keys::leafref_index_prefix(Datastore::Running), keys::leafref_index_prefix(Datastore::Candidate)),
        ] {
            batch.delete_prefix(to.clone());
            snap.scan_prefix(&from, false, &mut |k, v| {
                let mut nk = to.clone();
                nk.extend_from_slice(&k[from.len()..]);
                batch.put(nk, v.to_vec());
                Ok(true)
            })?;
        }
        // Running's leafref index, if complete, is the copy's.
        match snap.get(&keys::leafrefs_key(Datastore::Running))? {
            Some(v) => batch.put(keys::leafrefs_key(Datastore::Candidate), v),
            None => batch.delete(keys::leafrefs_key(Datastore::Candidate)),
        }
        batch.put(keys::CANDIDATE.to_vec(), Vec::new());
        Ok(self.backend().apply(&batch)?)
    }

    /// Makes the candidate read as running again, dropping its changes
    /// (RFC 6241 `<discard-changes>`).
    ///
    /// # Errors
    /// [`Error::Locked`] when another connection holds the candidate's lock.
    pub fn discard_candidate(&self) -> Result<()> {
        self.control_write(|_, live, batch| {
            self.check_unlocked(live, Datastore::Candidate)?;
            discard_ops(batch);
            Ok(())
        })
    }

    /// Commits the candidate to running (RFC 6241 `<commit>`): running gets
    /// the candidate's contents in one transaction (validated, seen by
    /// running's subscribers), then the candidate reads as running again.
    ///
    /// # Errors
    /// [`Error::Locked`] when another connection holds running's or the
    /// candidate's lock; as [`crate::Session::apply`].
    pub fn commit_candidate(&self) -> Result<Commit> {
        {
            let snap = self.backend().snapshot()?;
            let control = self.control_at(&*snap)?;
            self.check_unlocked(&control.live_locks(self.backend(), &self.hub)?, Datastore::Candidate)?;
            if !control.candidate_modified {
                return Ok(Commit { revision: snap.revision(), changes: Vec::new(), streamed: None });
            }
        }
        let commit = self.copy_datastore(Datastore::Candidate, Datastore::Running)?;
        self.discard_candidate()?;
        let revision = self.revision()?;
        Ok(Commit { revision, ..commit })
    }

    /// Replaces the contents of `to` with those of `from` in one transaction
    /// (validated, seen by `to`'s subscribers). Copying running to the
    /// candidate is a discard.
    ///
    /// # Errors
    /// [`Error::Usage`] for operational on either side (it holds state, not
    /// configuration); [`Error::Locked`] when another connection holds `to`'s lock.
    pub fn copy_datastore(&self, from: Datastore, to: Datastore) -> Result<Commit> {
        if from == Datastore::Operational || to == Datastore::Operational {
            return Err(Error::Usage(
                "operational cannot be copied to or from: it holds state, not configuration".into(),
            ));
        }
        let snap = self.backend().snapshot()?;
        let control = self.control_at(&*snap)?;
        let source = control.read_ds(from);
        if from == to || (to == Datastore::Candidate && source == Datastore::Running) {
            if to == Datastore::Candidate && control.candidate_modified {
                drop(snap);
                self.discard_candidate()?;
            }
            return Ok(Commit { revision: self.revision()?, changes: Vec::new(), streamed: None });
        }
        drop(snap);
        let tree = self.session(source).get("/", ReadOptions::default())?;
        let edit =
            Edit { op: Operation::Replace, path: Path::root(), value: Some(Node::Container(tree)), insert: None };
        self.session(to).apply_owned(vec![edit])
    }
}
