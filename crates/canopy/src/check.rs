//! `check`: verifies a store's integrity from one snapshot.

use std::collections::BTreeMap;

use canopy_core::keycode;
use canopy_core::ListInfo;
use canopy_core::Schema;
use canopy_store::fragment;
use canopy_store::keys::{self, RawSelector};
use canopy_store::Backend;

use crate::error::Result;
use canopy_store::treeio::describe_key;

/// At most this many problems are listed; the rest are counted.
const MAX_LISTED: usize = 100;

/// Progress is reported every this many records.
const PROGRESS_EVERY: u64 = 4096;

/// Checks every record of the store; returns the problems found.
/// `yang_lists`: the lists of the store's YANG schema (their keys are not
/// stored as learned lists), or why the schema could not be read.
pub(crate) fn check(
    backend: &dyn Backend,
    yang_lists: std::result::Result<BTreeMap<String, ListInfo>, String>,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<String>> {
    let mut problems = backend.check()?;
    let snap = backend.snapshot()?;
    let mut schema: canopy_core::Schemaless = match crate::schema::load(&*snap) {
        Ok(s) => s,
        Err(e) => {
            problems.push(e.to_string());
            Default::default()
        }
    };
    match yang_lists {
        Ok(lists) => schema.lists.extend(lists),
        Err(e) => problems.push(format!("the YANG schema: {e}")),
    }
    let mut extra = 0usize;
    let mut report = |problems: &mut Vec<String>, p: String| {
        if problems.len() < MAX_LISTED {
            problems.push(p);
        } else {
            extra += 1;
        }
    };
    match snap.get(keys::FORMAT)? {
        Some(v) if v.len() == 4 => {}
        Some(_) => report(&mut problems, "the format record is damaged".into()),
        None => report(&mut problems, "the format record is missing".into()),
    }
    if snap.get(keys::REVISION)?.is_some_and(|v| v.len() != 8) {
        report(&mut problems, "the revision record is damaged".into());
    }
    // Fragments come in document order, so a fragment's parent, if stored, was
    // seen just before it on the chain of open ancestors.
    let mut ancestors: Vec<Vec<u8>> = Vec::new();
    let mut fragments = 0u64;
    let mut records = 0u64;
    let mut found: Vec<String> = Vec::new();
    snap.scan(&[0x00], None, false, &mut |k, v| {
        records += 1;
        if records.is_multiple_of(PROGRESS_EVERY) {
            progress(records);
        }
        match k.first() {
            Some(0x00) => {
                if !(k == keys::FORMAT
                    || k == keys::REVISION
                    || k == keys::CANDIDATE
                    || k.starts_with(keys::LIST_INFO)
                    || k.starts_with(keys::LOCK)
                    || k.starts_with(keys::PUSHER)
                    || k.starts_with(keys::PUSHED)
                    || k.starts_with(keys::YANG)
                    || k.starts_with(keys::LEAFREFS))
                {
                    match canopy_store::changelog::revision_of(k) {
                        Some(r) => {
                            if let Err(e) = canopy_store::changelog::decode(v) {
                                found.push(format!("the change log record of revision {r}: {e}"));
                            }
                        }
                        None => found.push(format!("unknown store record {}", keys::hex(k))),
                    }
                }
            }
            Some(0x10..=0x14) if k.len() >= 2 => {
                fragments += 1;
                let rel = &k[2..];
                check_fragment(&*snap, &schema, k[1], rel, v, &mut ancestors, &mut found)?;
            }
            Some(0x20..=0x24) if k.len() >= 2 => check_order_record(&*snap, k, v, &mut found)?,
            // The leafref indexes: rebuilt by the next commit when stale.
            Some(0x30) => {}
            _ => found.push(format!("unknown record {}", keys::hex(k))),
        }
        Ok(found.len() <= MAX_LISTED)
    })?;
    progress(records);
    for f in found {
        report(&mut problems, f);
    }
    if extra > 0 {
        problems.push(format!("... and {extra} more problems"));
    }
    let _ = fragments;
    Ok(problems)
}

fn check_fragment(
    snap: &dyn canopy_store::Snapshot,
    schema: &canopy_core::Schemaless,
    ds: u8,
    rel: &[u8],
    v: &[u8],
    ancestors: &mut Vec<Vec<u8>>,
    found: &mut Vec<String>,
) -> canopy_store::Result<()> {
    let name = describe_key(rel);
    let segs = match keys::decode_path_key(rel) {
        Ok(s) => s,
        Err(e) => {
            let ds = keys::Datastore::from_code(ds).map_or_else(|| format!("code {ds}"), |d| d.name().to_string());
            found.push(format!("datastore {ds}: {e}"));
            return Ok(());
        }
    };
    let frag = match fragment::decode(v) {
        Ok(f) => f,
        Err(e) => {
            found.push(format!("fragment {name}: {e}"));
            return Ok(());
        }
    };
    // Parent: the key without its last segment.
    let mut cut = 0;
    let mut pos = 0;
    while pos < rel.len() {
        cut = pos;
        pos += keys::first_segment_len(&rel[pos..]).unwrap_or(rel.len() - pos);
    }
    let parent = &rel[..cut];
    while ancestors.last().is_some_and(|a| !rel.starts_with(a)) {
        ancestors.pop();
    }
    if !parent.is_empty() && ancestors.last().map(Vec::as_slice) != Some(parent) {
        found.push(format!("fragment {name} has no parent fragment"));
    }
    ancestors.push(rel.to_vec());
    let Some(last) = segs.last() else { return Ok(()) };
    let mut schema_path = String::new();
    for s in &segs {
        schema_path.push('/');
        schema_path.push_str(&s.name);
    }
    if let RawSelector::Keys(vals) = &last.selector {
        let Some(info) = schema.list_info(&schema_path) else {
            found.push(format!("list {schema_path} has entries but no stored key names"));
            return Ok(());
        };
        if info.keys.len() != vals.len() {
            found.push(format!("entry {name}: {} key values, the list has keys {:?}", vals.len(), info.keys));
            return Ok(());
        }
        for (k, want) in info.keys.iter().zip(vals) {
            if frag.container.key_text(k).as_deref() != Some(want.as_str()) {
                found.push(format!("entry {name}: key leaf `{k}` does not match the entry's key"));
            }
        }
        // The list's key (parent and name) and the entry key, as stored: the
        // bytes, not a re-encoding of the decoded values, which differs for a
        // key stored in another form than the canonical one.
        let mut name_end = cut;
        keycode::read_escaped(rel, &mut name_end);
        let (list_key, entry_key) = rel.split_at(name_end);
        if entry_key != keycode::entry_key(vals) {
            found.push(format!(
                "entry {name}: its key values are not stored in canonical form (a path cannot reach it)"
            ));
        }
        match (&frag.order, info.user_ordered) {
            (Some(order), true) => {
                let mut ok = vec![0x20, ds];
                ok.extend_from_slice(list_key);
                ok.extend_from_slice(order);
                ok.push(0);
                match snap.get(&ok)? {
                    Some(suffix) if suffix == entry_key => {}
                    _ => found.push(format!("entry {name} of a user-ordered list is missing from the order index")),
                }
            }
            (None, true) => found.push(format!("entry {name} of a user-ordered list has no order")),
            (Some(_), false) => found.push(format!("entry {name} of a system-ordered list has an order")),
            (None, false) => {}
        }
    }
    Ok(())
}

fn check_order_record(
    snap: &dyn canopy_store::Snapshot,
    k: &[u8],
    v: &[u8],
    found: &mut Vec<String>,
) -> canopy_store::Result<()> {
    // k = 0x20+ds, list key, order, 0x00; v = entry key suffix.
    let mut data = vec![0x10, k[1]];
    let body = &k[2..];
    let Some(zero) = body.iter().rposition(|&b| b == 0) else {
        found.push(format!("order record {} is malformed", keys::hex(k)));
        return Ok(());
    };
    let without_zero = &body[..zero];
    // The list key ends with the name terminator 0x00 0x01; the order key follows.
    let Some(split) = without_zero.windows(2).rposition(|w| w == [0, 1]).map(|i| i + 2) else {
        found.push(format!("order record {} is malformed", keys::hex(k)));
        return Ok(());
    };
    let (list_key, order) = without_zero.split_at(split);
    if !keycode::is_order_key(order) {
        found.push(format!("order record {} holds a malformed order key `{}`", keys::hex(k), keys::hex(order)));
        return Ok(());
    }
    data.extend_from_slice(list_key);
    data.extend_from_slice(v);
    match snap.get(&data)? {
        Some(frag) => match fragment::decode(&frag) {
            Ok(d) if d.order.as_deref() == Some(order) => {}
            _ => found.push(format!("order record of {} does not match its entry", describe_key(&data[2..]))),
        },
        None => found.push(format!("order record points to a missing entry {}", describe_key(&data[2..]))),
    }
    Ok(())
}
