//! The schemaless store's learned list information, kept in the store.
//!
//! Without a schema, a list's key names and ordering are learned the first
//! time the list is created (see `docs/design.md`, "Schemaless lists") and
//! stored under `keys::LIST_INFO`, so every later session and process reads
//! them back.

use canopy_core::tree::ListInfo;
use canopy_core::Schemaless;
use canopy_store::keys;
use canopy_store::{Snapshot, StoreError};

use crate::error::Result;

/// The stored form of a list's info: `{"keys":[...],"user-ordered":bool}`.
pub(crate) fn encode_list_info(info: &ListInfo) -> Vec<u8> {
    serde_json::json!({"keys": info.keys, "user-ordered": info.user_ordered}).to_string().into_bytes()
}

fn decode_list_info(path: &str, b: &[u8]) -> Result<ListInfo> {
    let bad = || StoreError::corrupted(format!("list info of {path} is damaged"));
    let v: serde_json::Value = serde_json::from_slice(b).map_err(|_| bad())?;
    let keys = v["keys"]
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|k| k.as_str().map(String::from).ok_or_else(bad))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let user_ordered = v["user-ordered"].as_bool().ok_or_else(bad)?;
    Ok(ListInfo { keys, user_ordered })
}

/// Reads every learned list from a snapshot.
pub(crate) fn load(snap: &dyn Snapshot) -> Result<Schemaless> {
    let mut s = Schemaless::default();
    let mut err = None;
    snap.scan_prefix(keys::LIST_INFO, false, &mut |k, v| {
        let path = String::from_utf8_lossy(&k[keys::LIST_INFO.len()..]).into_owned();
        match decode_list_info(&path, v) {
            Ok(info) => {
                s.lists.insert(path, info);
                Ok(true)
            }
            Err(e) => {
                err = Some(e);
                Ok(false)
            }
        }
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(s),
    }
}
