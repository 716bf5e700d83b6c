//! The schemaless store's learned list information, kept in the store.
//!
//! Without a schema, a list's key names and ordering are learned the first
//! time the list is created (see `docs/design.md`, "Schemaless lists") and
//! stored under `keys::LIST_INFO`, so every later session and process reads
//! them back.

use canopy_core::Schemaless;
use canopy_store::keys;
use canopy_store::Snapshot;

use crate::error::Result;

/// Reads every learned list from a snapshot.
pub(crate) fn load(snap: &dyn Snapshot) -> Result<Schemaless> {
    let mut s = Schemaless::default();
    let mut err = None;
    snap.scan_prefix(keys::LIST_INFO, false, &mut |k, v| {
        let path = String::from_utf8_lossy(&k[keys::LIST_INFO.len()..]).into_owned();
        match keys::decode_list_info(&path, v) {
            Ok(info) => {
                s.lists.insert(path, info);
                Ok(true)
            }
            Err(e) => {
                err = Some(e.into());
                Ok(false)
            }
        }
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(s),
    }
}
