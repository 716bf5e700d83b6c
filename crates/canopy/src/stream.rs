//! Streaming reads: a subtree written as RFC 7951 JSON straight from the
//! stored fragments, in one range scan, without building the tree
//! ([`canopy_store::stream::JsonStream`] does the writing).

use std::io::Write;

use canopy_core::path::{Path, Selector};
use canopy_core::tree::Container;
use canopy_core::{Schema, Schemaless};
use canopy_store::fragment;
use canopy_store::keys::{self, Datastore};
use canopy_store::stream::{JsonStream, OrderSource};
use canopy_store::{Snapshot, StoreError};

use crate::error::{Error, Result};

/// The output, remembering its first write error: that one is the caller's
/// (a closed pipe, say), not the store's.
pub(crate) struct Output<'e, W> {
    pub(crate) out: W,
    pub(crate) failed: &'e mut Option<std::io::Error>,
}

impl<W: Write> Write for Output<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf).inspect_err(|e| *self.failed = Some(std::io::Error::new(e.kind(), e.to_string())))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().inspect_err(|e| *self.failed = Some(std::io::Error::new(e.kind(), e.to_string())))
    }
}

/// Whether [`write_path`] can stream `path`: the root, or a path of
/// containers and keyed entries (no positions, leaves or leaf-list entries).
pub(crate) fn streamable(path: &Path) -> bool {
    path.segments.iter().all(|s| matches!(s.selector, Selector::None | Selector::Keys(_)))
}

/// Whether every keyed step of `path` names its entry by all of its list's
/// keys, as `lists` knows them: a predicate on other leaves (`[mtu='1500']`)
/// is an XPath filter, which [`write_path`] cannot read by key.
pub(crate) fn names_entries(path: &Path, lists: &dyn Schema) -> bool {
    path.segments.iter().enumerate().all(|(i, s)| match &s.selector {
        Selector::Keys(k) => {
            let sp = Path { segments: path.segments[..=i].to_vec() }.schema_path();
            crate::prepare::names_one_entry(k, lists.list_info(&sp).as_ref())
        }
        _ => true,
    })
}

/// Writes the node at `path` (canonical; see [`streamable`]) with its
/// ancestors as one RFC 7951 document: a container, a list entry or a whole
/// list, entry after entry as the range scan meets them, a user-ordered list
/// in the order its order index gives (a read's memory is one entry's, not
/// the list's). Returns `Ok(false)`, having written nothing, when the path names
/// nothing stored or something that is not a container, entry or known list
/// (a leaf, say): the caller then reads it the general way.
pub(crate) fn write_path<W: Write>(
    snap: &dyn Snapshot,
    ds: Datastore,
    schema: &Schemaless,
    path: &Path,
    pretty: bool,
    out: W,
) -> Result<bool> {
    let data = keys::data_prefix(ds);
    let rel = keys::path_key(path)?;
    let mut key = data.clone();
    key.extend_from_slice(&rel);
    // The target must be a stored container or entry, or a known list with
    // an entry; for the root, anything goes.
    let target = if path.is_root() {
        None
    } else {
        match snap.get(&key)? {
            Some(v) => Some(v),
            None => {
                let list = matches!(path.last().map(|s| &s.selector), Some(Selector::None))
                    && schema.list_info(&path.schema_path()).is_some();
                if !list || snap.first_with_prefix(&key, false)?.is_none() {
                    return Ok(false);
                }
                None
            }
        }
    };
    let order = keys::order_prefix(ds);
    let source = OrderSource { snap, data: &data, order: &order, scope: &rel };
    let mut failed = None;
    let written = stream_path(
        snap,
        &data,
        &rel,
        target,
        path,
        JsonStream::new(Output { out, failed: &mut failed }, pretty, schema).with_order_source(source),
    );
    match (written, failed) {
        (Err(_), Some(e)) => Err(Error::Output(e)),
        (Err(Error::Store(e)), None) => Err(crate::load::in_datastore(&data, e).into()),
        (written, _) => written,
    }
}

/// [`write_path`] into `s`, once the target is known to be stored.
fn stream_path<W: Write>(
    snap: &dyn Snapshot,
    data: &[u8],
    rel: &[u8],
    target: Option<Vec<u8>>,
    path: &Path,
    mut s: JsonStream<'_, W>,
) -> Result<bool> {
    // The root's own fragment (top-level leaves, root metadata) is the base frame.
    if path.is_root() {
        if let Some(v) = snap.get(data)? {
            s.root(&v)?;
        }
    }
    // Ancestors: containers by name, entries with their key leaves only.
    let mut anc_rel = Vec::new();
    for (i, seg) in path.segments.iter().enumerate() {
        let last = i + 1 == path.segments.len();
        keys::push_name(&mut anc_rel, &seg.name);
        match &seg.selector {
            Selector::None if !last => s.ancestor_container(&seg.name, &anc_rel)?,
            Selector::Keys(kv) if !last => {
                for (_, v) in kv {
                    canopy_core::keycode::push_key_value(&mut anc_rel, v);
                }
                let mut akey = data.to_vec();
                akey.extend_from_slice(&anc_rel);
                let Some(v) = snap.get(&akey)? else { return Ok(false) };
                let d = fragment::decode(&v).map_err(|e| crate::load::corrupt(&anc_rel, e))?;
                let mut keys_only = Container::default();
                for (k, _) in kv {
                    if let Some(n) = d.container.children.get(k) {
                        keys_only.children.insert(k.clone(), n.clone());
                    }
                }
                s.ancestor_entry(&seg.name, &anc_rel, &keys_only)?;
            }
            _ => {}
        }
    }
    // The target itself, then everything below it.
    if let Some(v) = target {
        s.fragment(rel, &v)?;
    }
    let dl = data.len();
    let mut err: Option<StoreError> = None;
    let mut scan_prefix = data.to_vec();
    scan_prefix.extend_from_slice(rel);
    snap.scan_prefix(&scan_prefix, false, &mut |k, v| {
        let r = &k[dl..];
        if r == rel {
            return Ok(true);
        }
        match s.fragment(r, v) {
            Ok(()) => Ok(true),
            Err(e) => {
                err = Some(e);
                Ok(false)
            }
        }
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    s.finish()?;
    Ok(true)
}
