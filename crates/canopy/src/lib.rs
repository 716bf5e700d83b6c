//! canopy: one datastore for hierarchical configuration and state data.
//!
//! ```no_run
//! use canopy::{Store, Value};
//! let store = Store::open("lmdb:./canopy-data")?;
//! let running = store.running();
//! running.set("/m:system/hostname", Value::String("r1".into()))?;
//! let tree = running.get("/m:system", Default::default())?;
//! # Ok::<(), canopy::Error>(())
//! ```
//!
//! A [`Store`] is opened by URL; a [`Session`] works on one datastore; every
//! write is a transaction that returns its diff ([`Commit`]). Without `cache=on`
//! reads and writes touch only the fragments they need; with it, each
//! datastore's tree stays in memory and writes go through as diffs.

mod admin;
mod bulk;
mod cache;
mod candidate;
mod catalog;
mod check;
mod commit;
mod connections;
pub mod error;
mod free;
mod hub;
mod leafrefs;
mod listen;
mod load;
pub mod open;
mod operational;
mod pinned;
mod prepare;
mod read;
mod results;
mod rooted;
mod scan;
mod schema;
mod session;
mod store;
mod stream;
pub mod subscribe;
mod transaction;
mod view;
mod vouched;
mod watch;
mod yang;

pub use admin::{copy, copy_with_progress, CopyReport, StoreInfo, COPY_BATCH};
pub use canopy_core::diff::{Change, Place, Subtree};
pub use canopy_core::edit::{Edit, Operation};
pub use canopy_core::tree::{Container, Insert, LeafListEntry, List, ListInfo, Node};
pub use canopy_core::Violation;
pub use canopy_core::{json, Meta, Path, Value};
pub use canopy_store::keys::Datastore;
pub use canopy_yang::{Module as YangModule, WithDefaults, YangSchema};
pub use connections::LockInfo;
pub use error::{Error, Result};
pub use hub::Provider;
pub use operational::{ORIGIN, ORIGIN_INTENDED, ORIGIN_UNKNOWN};
pub use pinned::Pinned;
pub use read::{trim as trim_depth, ReadOptions};
pub use results::EntryFragments;
pub use store::conflict_pause;
pub use store::{Options, Session, Store};
pub use subscribe::{ChangeEvent, Subscriber, Subscription};
pub use transaction::{Commit, Imported};
pub use yang::Validation;
