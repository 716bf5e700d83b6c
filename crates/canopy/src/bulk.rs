//! Bulk imports that stream: a document imported into an empty datastore (or
//! replacing one) is parsed straight into fragment records, without the tree
//! and diff of a transaction (`docs/design.md`, "Imports that stream").
//!
//! The document is read through the parser's buffer and each list entry's
//! records go on as soon as the entry ends: to the backend's bulk write part
//! by part (LMDB), else into one batch committed through the write view the
//! checks read. Neither the text nor a tree of it is held. Either way one
//! transaction, conditional on the revision the checks read.
//!
//! Only where nothing needs the diff: no subscriber of this process on the
//! datastore, no change log (other processes' subscribers read it), and no
//! YANG schema (whose checks run on the diff and the tree: `must`, `when`,
//! `leafref`, `unique`, mandatory nodes and list bounds read across entries).
//! Anywhere else [`Session::import`] builds the tree and commits it as a
//! transaction.

use std::io::Read;

use canopy_core::edit::Operation;
use canopy_core::tree::Container;
use canopy_core::Schemaless;
use canopy_store::keys::{self, Datastore};
use canopy_store::stream::{stream_fragments, StreamError};
use canopy_store::{fragment, Batch, BatchOp, BulkWrite, Snapshot, WriteView};

use crate::error::{Error, Result};
use crate::store::{poisoned, Session, Store};
use crate::transaction::{Commit, Imported};

impl Session<'_> {
    /// Imports the document from `input` by streaming it into fragments, when
    /// the import may (see the module doc): `Ok(None)` when it may not, with
    /// nothing read from `input`. Lists are parsed as `parse_schema` knows them.
    ///
    /// # Errors
    /// [`Error::Data`] for malformed JSON (with line and column), nothing
    /// stored; [`Error::Locked`]; backend errors (a conflict with another
    /// process's commit is not retried: the input is read once).
    pub(crate) fn import_streamed<R: Read>(
        &self,
        input: R,
        op: Operation,
        parse_schema: &Schemaless,
    ) -> Result<Option<Commit>> {
        let (store, ds) = (self.store, self.ds);
        let plain_ds = !self.pushes() && ds != Datastore::Candidate;
        if !plain_ds || !matches!(op, Operation::Merge | Operation::Replace) {
            return Ok(None);
        }
        crate::subscribe::check_not_calling(store.conn.id)?;
        let _w = store.writer.lock().map_err(|_| poisoned())?;
        if !store.nobody_needs_diff(ds) {
            return Ok(None);
        }
        let view = store.backend.begin_write()?;
        let snap: &dyn Snapshot = &*view;
        let base = snap.revision();
        let catalog = store.catalog_at(snap)?;
        if catalog.yang.is_some() {
            return Ok(None);
        }
        store.check_unlocked(&catalog.control.live_locks(store.backend(), &store.hub)?, ds)?;
        let data = keys::data_prefix(ds);
        let empty = snap.first_with_prefix(&data, false)?.is_none();
        if !empty && op == Operation::Merge {
            return Ok(None);
        }
        let mut out = Out::begin(store, view, base)?;
        if !empty {
            out.push(BatchOp::DeletePrefix(data.clone()))?;
            out.push(BatchOp::DeletePrefix(keys::order_prefix(ds)))?;
        }
        // A root that holds nothing is not stored (as a transaction leaves it).
        let empty_root = fragment::encode(&Container::default(), None);
        let mut fragments = 0u64;
        let streamed = stream_fragments(input, parse_schema, ds, &mut |mut k, mut v| {
            if k == data && v == empty_root {
                return Ok(());
            }
            fragments += u64::from(k.starts_with(&data));
            // Keys grew as entry keys were put in front of their descendants'.
            k.shrink_to_fit();
            v.shrink_to_fit();
            out.push(BatchOp::Put(k, v))
        });
        let streamed = match streamed {
            Ok(s) => s,
            Err(StreamError::Json(e)) => return Err(Error::Data(e)),
            Err(StreamError::Sink(e)) => return Err(Error::Store(e)),
        };
        let changes = streamed.top_level + u64::from(streamed.root_meta);
        // The lists the document holds are learned, as a transaction learns them.
        let mut lists = (*catalog.lists).clone();
        for (schema_path, info) in streamed.lists {
            if let std::collections::btree_map::Entry::Vacant(e) = lists.lists.entry(schema_path) {
                let mut k = keys::LIST_INFO.to_vec();
                k.extend_from_slice(e.key().as_bytes());
                out.push(BatchOp::Put(k, keys::encode_list_info(&info)))?;
                e.insert(info);
            }
        }
        let Some(revision) = out.commit(store)? else {
            return Ok(Some(Commit { revision: base, changes: Vec::new(), streamed: None }));
        };
        store.catalog_committed(base, revision, Some(lists), None);
        store.forget_cached(ds, base, revision);
        Ok(Some(Commit { revision, changes: Vec::new(), streamed: Some(Imported { fragments, changes }) }))
    }
}

/// Bytes of records gathered before they go to a bulk write as one part.
const PART_BYTES: usize = 4 << 20;

/// Where the records go: the backend's bulk write, part by part, or one
/// batch committed through the write view when the backend has none.
enum Out<'a> {
    Bulk { bulk: Box<dyn BulkWrite>, part: Vec<BatchOp>, bytes: usize, any: bool },
    Batch { view: Option<Box<dyn WriteView + 'a>>, batch: Batch },
}

impl<'a> Out<'a> {
    /// `view` is the write view the checks read, at revision `base`.
    fn begin(store: &'a Store, view: Box<dyn WriteView + 'a>, base: u64) -> Result<Out<'a>> {
        let batch = Batch { expect_revision: Some(base), ops: Vec::new() };
        if !store.backend.bulk_writes() {
            return Ok(Out::Batch { view: Some(view), batch });
        }
        // The view's reads end here: a bulk write may have to resize LMDB's
        // map, which waits for no snapshot of the process to be open.
        drop(view);
        Ok(match store.backend.begin_bulk(base)? {
            Some(bulk) => Out::Bulk { bulk, part: Vec::new(), bytes: 0, any: false },
            None => Out::Batch { view: None, batch },
        })
    }

    fn push(&mut self, op: BatchOp) -> canopy_store::Result<()> {
        match self {
            Out::Batch { batch, .. } => batch.ops.push(op),
            Out::Bulk { bulk, part, bytes, any } => {
                *bytes += match &op {
                    BatchOp::Put(k, v) => k.len() + v.len(),
                    BatchOp::Delete(k) | BatchOp::DeletePrefix(k) => k.len(),
                };
                part.push(op);
                *any = true;
                if *bytes >= PART_BYTES {
                    *bytes = 0;
                    bulk.write(std::mem::take(part))?;
                }
            }
        }
        Ok(())
    }

    /// Commits what was written: the new revision, `None` when nothing was.
    fn commit(self, store: &Store) -> Result<Option<u64>> {
        match self {
            Out::Batch { batch, .. } if batch.is_empty() => Ok(None),
            Out::Batch { view: Some(view), batch } => Ok(Some(view.commit(&batch)?)),
            Out::Batch { view: None, batch } => Ok(Some(store.backend.apply(&batch)?)),
            Out::Bulk { any: false, .. } => Ok(None),
            Out::Bulk { mut bulk, part, .. } => {
                bulk.write(part)?;
                Ok(Some(bulk.commit()?))
            }
        }
    }
}

impl Store {
    /// Whether no one of this store needs the diff of a commit to `ds`: no
    /// subscriber of this process on it, and no change log.
    fn nobody_needs_diff(&self, ds: Datastore) -> bool {
        self.changelog == 0 && !self.hub.subscribers().iter().any(|e| e.ds == ds)
    }

    /// With `cache=on`, after a commit to `ds` at `revision` on top of `base`
    /// that gave no diff: the cached tree of `ds` is dropped (the next read
    /// reads it again); the others, if `base`'s, stay valid.
    fn forget_cached(&self, ds: Datastore, base: u64, revision: u64) {
        let Some(cache) = &self.cache else { return };
        let Ok(mut g) = cache.write() else { return };
        g.remove(&ds);
        for c in g.values_mut() {
            if c.revision == base {
                c.revision = revision;
            }
        }
    }
}
