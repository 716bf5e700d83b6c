//! Commits of other processes, handed to this process's subscribers.
//!
//! A commit writes what it changed into the store's change log
//! ([`canopy_store::changelog`]) in the same batch, when the store keeps one
//! (`?changelog=N` records; by default on the backends that announce commits,
//! which are the ones several processes or hosts share). A process with
//! subscriptions runs one listener thread per store: it wakes on the
//! backend's announcement of a commit (or polls the revision, on backends
//! that announce nothing), reads the log records since the revision it last
//! saw in one range scan, and calls `apply` of the subscribers those changes
//! concern. The committing process's own subscribers are called by the
//! commit itself (`validate` included); the others get `apply` only, after
//! the commit is stored.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use canopy_core::diff::Change;
use canopy_store::keys::{self, Datastore};
use canopy_store::{changelog, Announcements, Backend, Batch, Snapshot};

use crate::error::Result;
use crate::hub::Hub;
use crate::store::Store;
use crate::subscribe::Matched;

/// How long a listener waits for an announcement before it reads the
/// revision anyway (announcements can be lost while a connection is down).
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How often a listener reads the revision of a backend that announces
/// nothing.
const POLL: Duration = Duration::from_millis(10);
/// The connection id listeners call subscribers as: no connection is
/// committing, so every connection may be used inside the callback.
const NO_CONNECTION: u64 = u64::MAX;
/// Old records one commit deletes at most (a window made smaller deletes
/// the surplus over several commits).
const TRIM_PER_COMMIT: usize = 8;

/// This process among those attached to a store: its commits' records carry
/// it, so that it does not hand its own commits to its subscribers twice.
pub(crate) fn process_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!("{}-{nanos:x}", std::process::id())
    })
}

impl Store {
    /// Adds to `batch`, built on `snap`, the log record of `changes` to `ds`
    /// (the batch commits revision `snap.revision() + 1`), and deletes the
    /// records that fell out of the window.
    pub(crate) fn log_commit(
        &self,
        snap: &dyn Snapshot,
        ds: Datastore,
        changes: &[Change],
        batch: &mut Batch,
    ) -> Result<()> {
        if self.changelog == 0 || changes.is_empty() {
            return Ok(());
        }
        let revision = snap.revision() + 1;
        batch.put(changelog::key(revision), changelog::encode(ds, process_token(), changes));
        if let Some(cutoff) = revision.checked_sub(self.changelog) {
            let mut old = Vec::new();
            snap.scan_prefix(keys::LOG, false, &mut |k, _| match changelog::revision_of(k) {
                Some(r) if r <= cutoff && old.len() < TRIM_PER_COMMIT => {
                    old.push(k.to_vec());
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            for k in old {
                batch.delete(k);
            }
        }
        Ok(())
    }

    /// Starts this process's listener of the store, unless it runs or the
    /// store keeps no change log. Called when a subscription is made.
    pub(crate) fn listen(&self) -> Result<()> {
        if self.changelog == 0 {
            return Ok(());
        }
        let mut running = self.hub.listener.lock().unwrap_or_else(|p| p.into_inner());
        if *running {
            return Ok(());
        }
        let last = self.backend.snapshot()?.revision();
        let hub = Arc::downgrade(&self.hub);
        let backend = self.backend.clone();
        std::thread::Builder::new()
            .name("canopy-listener".into())
            .spawn(move || Listener { hub, backend, last, announcements: None }.run())
            .map_err(|e| crate::Error::Store(canopy_store::StoreError::io("start the change listener", e)))?;
        *running = true;
        Ok(())
    }
}

struct Listener {
    hub: Weak<Hub>,
    backend: Arc<dyn Backend>,
    /// The newest revision whose commits were handed on.
    last: u64,
    announcements: Option<Box<dyn Announcements>>,
}

impl Listener {
    fn run(mut self) {
        loop {
            // Ends with the last subscription (a new one starts another).
            {
                let Some(hub) = self.hub.upgrade() else { return };
                let mut running = hub.listener.lock().unwrap_or_else(|p| p.into_inner());
                if hub.subscribers().is_empty() {
                    *running = false;
                    return;
                }
            }
            if let Some(revision) = self.wait() {
                if revision <= self.last {
                    continue;
                }
            }
            if self.catch_up().is_err() {
                // The server is away: its next answer tells what was missed.
                std::thread::sleep(HEARTBEAT.min(Duration::from_millis(200)));
            }
        }
    }

    /// Waits for the next announcement (its revision) or for the time to read
    /// the revision anyway (`None`).
    fn wait(&mut self) -> Option<u64> {
        if !self.backend.announces() {
            std::thread::sleep(POLL);
            return None;
        }
        if self.announcements.is_none() {
            match self.backend.announcements() {
                Ok(a) => self.announcements = Some(a),
                Err(_) => {
                    std::thread::sleep(HEARTBEAT);
                    return None;
                }
            }
        }
        match self.announcements.as_mut().map(|a| a.next(HEARTBEAT)) {
            Some(Ok(r)) => r,
            _ => {
                self.announcements = None;
                None
            }
        }
    }

    /// Hands the logged commits after `last` up to the store's revision to
    /// the subscribers they concern.
    fn catch_up(&mut self) -> Result<()> {
        let snap = self.backend.snapshot()?;
        let now = snap.revision();
        if now <= self.last {
            return Ok(());
        }
        let mut records = Vec::new();
        let end = changelog::key(now + 1);
        snap.scan(&changelog::key(self.last + 1), Some(&end), false, &mut |k, v| {
            if let Some(r) = changelog::revision_of(k) {
                records.push((r, v.to_vec()));
            }
            Ok(true)
        })?;
        drop(snap);
        self.last = now;
        let Some(hub) = self.hub.upgrade() else { return Ok(()) };
        for (revision, bytes) in records {
            // A record this canopy cannot read is another version's: its
            // commit is not handed on (the data itself is read as usual).
            let Ok(entry) = changelog::decode(&bytes) else { continue };
            if entry.by == process_token() {
                continue;
            }
            Matched::find(&hub, entry.datastore, &entry.changes).apply(NO_CONNECTION, &entry.changes, revision);
        }
        Ok(())
    }
}
