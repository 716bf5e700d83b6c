//! canopy's storage layer.
//!
//! A [`Backend`] is an ordered map of byte keys with snapshots and atomic
//! batches; it knows nothing of paths, YANG or JSON. This crate also defines how
//! data is laid out in that map ([`keys`]: one *fragment* per container or list
//! entry, keyed so that byte order is document order, [`fragment`]: the bytes of
//! one fragment), an in-memory backend, and the [`conformance`] suite every
//! backend runs.

pub mod backend;
pub mod changelog;
pub mod conformance;
pub mod error;
pub mod files;
pub mod fragment;
pub mod keys;
pub mod lease;
pub mod memory;
pub mod metered;
pub mod prefixed;
pub mod stream;
pub mod treeio;
pub mod url;

pub use backend::{Announcements, Backend, Batch, BatchOp, BulkWrite, Snapshot, SyncMode, WriteView};
pub use error::{ErrorKind, Result, StoreError};
pub use url::StoreUrl;
