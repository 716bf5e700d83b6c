//! The backend contract.

use crate::error::Result;

/// When a committed batch reaches stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// `apply` returns after the batch is durable: it survives kill -9 and power loss.
    #[default]
    Commit,
    /// `apply` returns before the batch is flushed. The store is never corrupted,
    /// but the most recent batches may be lost on a crash of the machine.
    Off,
}

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<SyncMode, String> {
        match s {
            "commit" | "on" => Ok(SyncMode::Commit),
            "off" => Ok(SyncMode::Off),
            _ => Err(format!("sync must be `commit` or `off`, not `{s}`")),
        }
    }
}

/// One write of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// Delete every key that starts with these bytes.
    DeletePrefix(Vec<u8>),
}

/// Writes applied atomically, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// When set, the batch applies only if the store's revision is this one;
    /// otherwise `apply` fails with [`crate::ErrorKind::Conflict`] and writes nothing.
    pub expect_revision: Option<u64>,
    pub ops: Vec<BatchOp>,
}

impl Batch {
    pub fn put(&mut self, k: Vec<u8>, v: Vec<u8>) {
        self.ops.push(BatchOp::Put(k, v));
    }

    pub fn delete(&mut self, k: Vec<u8>) {
        self.ops.push(BatchOp::Delete(k));
    }

    pub fn delete_prefix(&mut self, prefix: Vec<u8>) {
        self.ops.push(BatchOp::DeletePrefix(prefix));
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// The visitor of a scan: gets each key and value, returns whether to go on.
pub type Visit<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool> + 'a;

/// A consistent read view of the store at one revision.
///
/// Contract: every read of one snapshot sees the same committed state, whatever
/// commits happen meanwhile; a snapshot never sees part of a batch.
pub trait Snapshot {
    /// The revision this snapshot sees: 0 for a new store, +1 per applied batch.
    fn revision(&self) -> u64;

    /// The value of `key`.
    ///
    /// # Errors
    /// I/O or corruption errors of the backend.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Visits the keys in `[start, end)` (`end: None` = to the end of the store)
    /// in ascending order, or descending with `reverse`, until `visit` returns
    /// `Ok(false)`.
    ///
    /// # Errors
    /// Errors of the backend, or the first error `visit` returns.
    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()>;

    /// The values of `keys`, in their order: for a backend on a server (the
    /// default asks for each in turn), one round trip.
    ///
    /// # Errors
    /// As [`Snapshot::get`].
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// Whether each read is a round trip to a server, so that reading
    /// several keys with one [`Snapshot::get_many`] saves time (the
    /// default: no, reads are local).
    fn remote(&self) -> bool {
        false
    }

    /// Visits every key that starts with `prefix`, in order (see [`Snapshot::scan`]).
    ///
    /// # Errors
    /// As [`Snapshot::scan`].
    fn scan_prefix(&self, prefix: &[u8], reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        let end = prefix_end(prefix);
        self.scan(prefix, end.as_deref(), reverse, visit)
    }

    /// The first (or, with `reverse`, last) key/value under `prefix`.
    ///
    /// # Errors
    /// As [`Snapshot::scan`].
    fn first_with_prefix(&self, prefix: &[u8], reverse: bool) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut found = None;
        self.scan_prefix(prefix, reverse, &mut |k, v| {
            found = Some((k.to_vec(), v.to_vec()));
            Ok(false)
        })?;
        Ok(found)
    }
}

/// A read view that a batch is then committed through: see [`Backend::begin_write`].
///
/// Contract: as a [`Snapshot`], except that once another writer committed,
/// a read may fail with `Conflict` instead of seeing the view's revision
/// (its commit would be refused anyway; Redis's views register nothing on
/// the server, so they cannot read an older revision); [`commit`](WriteView::commit) applies the batch
/// as [`Backend::apply`] does, on top of the state the view read, or fails
/// with `Conflict` when another writer committed since. Dropping the view
/// without committing writes nothing.
pub trait WriteView: Snapshot {
    /// Applies `batch` atomically and returns the new revision.
    ///
    /// # Errors
    /// As [`Backend::apply`].
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64>;
}

/// A write too large to hold as one [`Batch`] (a bulk import): its writes
/// go to the backend part by part as they are produced and are committed
/// together, atomically, on top of the revision the write began on.
/// See [`Backend::begin_bulk`].
///
/// Contract: nothing written is visible to anyone before
/// [`commit`](BulkWrite::commit); dropping the write without committing
/// stores nothing. Parts apply in order, as the ops of one batch do.
pub trait BulkWrite {
    /// Adds `part` to the write.
    ///
    /// # Errors
    /// Backend errors; after one, the write can only be dropped.
    fn write(&mut self, part: Vec<BatchOp>) -> Result<()>;

    /// Commits every part written, with the durability of [`Backend::apply`],
    /// and returns the new revision.
    ///
    /// # Errors
    /// Backend errors (nothing is stored then).
    fn commit(self: Box<Self>) -> Result<u64>;
}

/// The default [`WriteView`]: a snapshot, then [`Backend::apply`] expecting
/// the snapshot's revision.
struct ReadThenApply<'a, B: Backend + ?Sized> {
    snap: Box<dyn Snapshot + 'a>,
    backend: &'a B,
}

impl<B: Backend + ?Sized> Snapshot for ReadThenApply<'_, B> {
    fn revision(&self) -> u64 {
        self.snap.revision()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.snap.get(key)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.snap.get_many(keys)
    }

    fn remote(&self) -> bool {
        self.snap.remote()
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        self.snap.scan(start, end, reverse, visit)
    }
}

impl<B: Backend + ?Sized> WriteView for ReadThenApply<'_, B> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let ReadThenApply { snap, backend } = *self;
        let revision = snap.revision();
        drop(snap);
        apply_at(backend, revision, batch)
    }
}

/// Applies `batch`, built on a view of `revision`, on top of that revision
/// (a `Conflict` when the store moved on): the commit of a write view whose
/// backend writes with [`Backend::apply`]. A batch expecting another
/// revision than its view's is refused.
///
/// # Errors
/// As [`Backend::apply`].
pub fn apply_at<B: Backend + ?Sized>(backend: &B, revision: u64, batch: &Batch) -> Result<u64> {
    match batch.expect_revision {
        Some(r) if r == revision => backend.apply(batch),
        Some(r) => Err(crate::StoreError::stale_batch(r, revision)),
        None => backend.apply(&Batch { expect_revision: Some(revision), ops: batch.ops.clone() }),
    }
}

/// The smallest key greater than every key that starts with `prefix`, or `None`
/// when there is none (the prefix is all `0xFF`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Commits announced by a database server to the processes attached to a
/// store (PostgreSQL `NOTIFY`, Redis `PUBLISH`, an etcd watch): one
/// listening connection, see [`Backend::announcements`].
pub trait Announcements: Send {
    /// The revision of the next commit announced, waiting up to `timeout`;
    /// `Ok(None)` when none came meanwhile. Announcements may be merged or
    /// lost while the connection is down: the listener reads the store's
    /// revision again after an error, and a revision announced is only a
    /// hint that the store reached it.
    ///
    /// # Errors
    /// `Unavailable` when the listening connection broke (ask the backend
    /// for new announcements).
    fn next(&mut self, timeout: std::time::Duration) -> Result<Option<u64>>;
}

/// What a backend's listening thread hands to [`ChannelAnnouncements`].
pub enum Heard {
    /// A commit of this revision (`u64::MAX`: a commit whose revision the
    /// server's message did not say).
    Commit(u64),
    /// Nothing for a while: the thread sends it to find out whether anyone
    /// still listens (it ends when the receiver is gone).
    Tick,
    /// The listening connection broke; the thread has ended.
    Broken(crate::StoreError),
}

/// [`Announcements`] read from a thread that listens on a connection of its
/// own (a subscribed Redis connection, an etcd watch stream).
pub struct ChannelAnnouncements {
    rx: std::sync::mpsc::Receiver<Heard>,
}

impl ChannelAnnouncements {
    pub fn new(rx: std::sync::mpsc::Receiver<Heard>) -> ChannelAnnouncements {
        ChannelAnnouncements { rx }
    }
}

impl Announcements for ChannelAnnouncements {
    fn next(&mut self, timeout: std::time::Duration) -> Result<Option<u64>> {
        use std::sync::mpsc::RecvTimeoutError;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match self.rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
                Ok(Heard::Commit(r)) => return Ok(Some(r)),
                Ok(Heard::Tick) => {}
                Ok(Heard::Broken(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(crate::StoreError::new(crate::ErrorKind::Unavailable, "the listening thread ended"))
                }
            }
        }
    }
}

/// An ordered byte-key store with snapshots and atomic batches.
///
/// Required: [`Backend::snapshot`] and [`Backend::apply`]; the rest have defaults
/// a backend overrides when it can do better. Backends never interpret keys or
/// values; the key [`crate::keys::REVISION`] is theirs to maintain.
pub trait Backend: Send + Sync {
    /// The backend's short name (`lmdb`, `memory`, ...).
    fn kind(&self) -> &'static str;

    /// A read view of the current committed state.
    ///
    /// # Errors
    /// The store cannot be read (I/O, unavailable).
    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>>;

    /// A snapshot for one short read that can be tried again: its reads see
    /// its revision, as a [`Backend::snapshot`]'s do, while the store is
    /// still at it, and may fail with [`crate::ErrorKind::Conflict`] once
    /// another writer has committed (never showing that writer's data); the
    /// caller then reads again on a new one. A backend whose snapshots cost
    /// round trips to register and end (Redis) overrides it; the default is
    /// a snapshot, whose reads do not fail so.
    ///
    /// # Errors
    /// As [`Backend::snapshot`].
    fn brief_snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        self.snapshot()
    }

    /// A brief snapshot that may take `revision` (the newest the caller
    /// knows of) for the store's revision without asking: when the store is
    /// elsewhere, its reads fail with `Conflict`, as a brief snapshot's do
    /// once the store moves on. The default asks ([`Backend::brief_snapshot`]),
    /// and its [`Snapshot::revision`] says the revision it read at.
    ///
    /// # Errors
    /// As [`Backend::snapshot`].
    fn brief_snapshot_at(&self, revision: u64) -> Result<Box<dyn Snapshot + '_>> {
        let _ = revision;
        self.brief_snapshot()
    }

    /// Whether [`Backend::brief_snapshot_at`] and [`Backend::begin_write_at`]
    /// take the revision given without asking (saving a round trip when it
    /// is the store's). The default: no, they ask, and callers need not
    /// offer one.
    fn takes_revisions(&self) -> bool {
        false
    }

    /// The store's revision now, as [`Snapshot::revision`] of a new snapshot
    /// says (the default), without keeping a view: a backend that can read
    /// it for less (on a database server, one round trip instead of a
    /// snapshot's opening and closing) overrides it.
    ///
    /// # Errors
    /// As [`Backend::snapshot`].
    fn revision(&self) -> Result<u64> {
        Ok(self.snapshot()?.revision())
    }

    /// Applies `batch` atomically: all of it or, on any error, none of it;
    /// readers see either the state before or after. Increments the revision by
    /// one and returns the new revision. With [`SyncMode::Commit`] the batch is
    /// durable when this returns.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Conflict`] when `expect_revision` does not match; I/O
    /// errors; `Unsupported` for a key the backend cannot hold.
    fn apply(&self, batch: &Batch) -> Result<u64>;

    /// Applies `batch` as [`apply`](Backend::apply) does, but it need not be
    /// flushed to disk: for records that do not outlive their writer (pushed
    /// operational state dies with its connection, and after a crash of the
    /// machine no connection is left to own it). Atomicity is unchanged: a
    /// crash never leaves part of the batch or a damaged store, and the next
    /// flushed commit flushes it too. The default flushes as `apply` does.
    ///
    /// # Errors
    /// As [`apply`](Backend::apply).
    fn apply_unflushed(&self, batch: &Batch) -> Result<u64> {
        self.apply(batch)
    }

    /// A read view to build a batch on, and to commit that batch through.
    ///
    /// The default is [`Backend::snapshot`] and, at commit, [`Backend::apply`]
    /// expecting the snapshot's revision, so a commit by another writer in
    /// between is a `Conflict` and the caller builds again. A backend whose
    /// write transactions can read overrides it to read and write in one
    /// transaction holding its write lock from the first read (SQLite: fewer
    /// statements per commit, and no conflicts); other writers then wait for
    /// the view to be committed or dropped.
    ///
    /// # Errors
    /// As [`Backend::snapshot`]; `Unavailable` when the write lock stays taken.
    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(ReadThenApply { snap: self.snapshot()?, backend: self }))
    }

    /// [`Backend::begin_write`] that may take `revision` (the newest the
    /// caller knows of) for the store's without asking: when the store is
    /// elsewhere, the view's reads and its commit fail with `Conflict`. The
    /// default asks, as `begin_write` does; its [`Snapshot::revision`] says
    /// the revision it read at.
    ///
    /// # Errors
    /// As [`Backend::begin_write`].
    fn begin_write_at(&self, revision: u64) -> Result<Box<dyn WriteView + '_>> {
        let _ = revision;
        self.begin_write()
    }

    /// Begins a [`BulkWrite`] on top of revision `expect_revision`, for
    /// writes the caller cannot hold in memory as one batch: `Ok(None)` when
    /// the backend has no such write (the default), and the caller gathers
    /// one [`Batch`] after all. A backend whose write transactions can take
    /// writes as they come (LMDB) overrides it; other writers then wait for
    /// the bulk write to be committed or dropped.
    ///
    /// # Errors
    /// `Conflict` when the store is no longer at `expect_revision` (nothing
    /// is written); backend errors.
    fn begin_bulk(&self, expect_revision: u64) -> Result<Option<Box<dyn BulkWrite>>> {
        let _ = expect_revision;
        Ok(None)
    }

    /// Whether [`Backend::begin_bulk`] may give a bulk write (`false`, the
    /// default: it never does). Asked first, so that a caller holding a write
    /// view keeps it, and commits through it, when there is none.
    fn bulk_writes(&self) -> bool {
        false
    }

    /// The durability this backend was opened with.
    fn sync_mode(&self) -> SyncMode {
        SyncMode::Commit
    }

    /// Bytes the store occupies on disk (0 for in-memory stores).
    ///
    /// # Errors
    /// I/O errors.
    fn disk_size(&self) -> Result<u64> {
        Ok(0)
    }

    /// How many keys the store holds, when the backend knows without a scan
    /// (for progress bars); `None` when it would have to count.
    ///
    /// # Errors
    /// The backend's, when it cannot be read.
    fn approx_len(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Rewrites the store so that space freed by deletes returns to the
    /// filesystem. Data and revision are unchanged.
    ///
    /// # Errors
    /// I/O errors; the store is unchanged when compaction fails.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    /// Checks the backend's own structures (beyond what reading every key
    /// checks) and returns the problems found.
    ///
    /// # Errors
    /// I/O errors that stop the check itself.
    fn check(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Whether the backend announces commits to the processes attached to
    /// it ([`Backend::announcements`]): a store several processes or hosts
    /// share through a server.
    fn announces(&self) -> bool {
        false
    }

    /// A connection that hears every commit of the store, by any process
    /// (this one's included), as it is committed.
    ///
    /// # Errors
    /// `Unsupported` when the backend does not announce commits (other
    /// processes' commits are then found by reading the revision); the
    /// backend's connection errors.
    fn announcements(&self) -> Result<Box<dyn Announcements>> {
        Err(crate::StoreError::new(
            crate::ErrorKind::Unsupported,
            format!("the {} backend does not announce commits", self.kind()),
        ))
    }

    /// Whether the backend keeps leases ([`Backend::lease`]): a store on a
    /// database server that processes on several hosts may share. The
    /// engine then ties locks and pushed state to a lease instead of a
    /// process of this host; without leases (the default: one host by
    /// nature) it asks the operating system whether a process still runs.
    fn leases(&self) -> bool {
        false
    }

    /// A lease this process holds on the server as long as it lives and the
    /// returned value is not dropped (see [`crate::lease`]).
    ///
    /// # Errors
    /// `Unsupported` when the backend keeps no leases (the default); the
    /// backend's connection errors.
    fn lease(&self) -> Result<Box<dyn crate::lease::Lease>> {
        Err(crate::StoreError::new(
            crate::ErrorKind::Unsupported,
            format!("the {} backend keeps no leases", self.kind()),
        ))
    }

    /// For each lease identity of `ids`, whether the server still holds it
    /// (a lease of any process, on any host). One round trip for all.
    ///
    /// # Errors
    /// `Unsupported` when the backend keeps no leases (the default); the
    /// backend's connection errors.
    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        let _ = ids;
        Err(crate::StoreError::new(
            crate::ErrorKind::Unsupported,
            format!("the {} backend keeps no leases", self.kind()),
        ))
    }

    /// Flushes batches applied with [`SyncMode::Off`] to stable storage.
    ///
    /// # Errors
    /// I/O errors.
    fn flush(&self) -> Result<()> {
        Ok(())
    }
}
