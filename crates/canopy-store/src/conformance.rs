//! The conformance suite every backend runs, unchanged.
//!
//! A backend crate expands it with one line in a test file:
//! ```ignore
//! canopy_store::conformance_tests!(|dir: &std::path::Path| open_my_backend(dir), persistent = true);
//! ```
//! The opener gets a fresh directory per test (its own namespace) and must open
//! or create the store there; persistent backends are reopened on the same
//! directory to check that data survives.

use std::path::Path;

use crate::backend::{Backend, Batch, BatchOp};
use crate::error::ErrorKind;

/// The URL of the test server the environment variable `var` names
/// (`scripts/servers.sh start` sets `CANOPY_POSTGRES_URL` and the like).
/// Unset, `None` and a note that the test is skipped; in CI (`CI` set), a
/// panic: CI runs every backend against its server.
///
/// # Panics
/// In CI, when `var` is unset.
pub fn server_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set: CI runs every backend against its server (scripts/servers.sh start)")
        }
        _ => {
            eprintln!("skipped: {var} is not set (eval \"$(scripts/servers.sh start)\" sets it)");
            None
        }
    }
}

/// `url` with the query parameters `params` (`a=1&b=2`) added.
pub fn with_params(url: &str, params: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{params}")
}

/// The URL of a server whose namespace is the database in the URL's path
/// (MongoDB), naming database `db` instead, its query kept.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let base = base.rsplit_once('/').map_or(base, |(b, _)| b);
    match query {
        "" => format!("{base}/{db}"),
        q => format!("{base}/{db}?{q}"),
    }
}

/// A name for a namespace (schema, key prefix) of the test directory `dir`:
/// `prefix` and the directory name's letters and digits, lower case.
pub fn namespace_of(prefix: &str, dir: &Path) -> String {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tail: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("{prefix}{}", tail.to_ascii_lowercase())
}

/// Opens (creating when absent) a backend whose data lives in this directory.
pub type Opener<'a> = &'a dyn Fn(&Path) -> Box<dyn Backend>;

fn all(b: &dyn Backend) -> Vec<(Vec<u8>, Vec<u8>)> {
    let s = b.snapshot().unwrap();
    let mut out = Vec::new();
    s.scan(&[0x01], None, false, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        Ok(true)
    })
    .unwrap();
    out
}

fn put(b: &dyn Backend, kv: &[(&[u8], &[u8])]) -> u64 {
    let mut batch = Batch::default();
    for (k, v) in kv {
        batch.put(k.to_vec(), v.to_vec());
    }
    b.apply(&batch).unwrap()
}

pub fn empty_store(open: Opener, dir: &Path) {
    let b = open(dir);
    let s = b.snapshot().unwrap();
    assert_eq!(s.revision(), 0);
    assert_eq!(b.revision().unwrap(), 0);
    assert_eq!(s.get(b"\x10a").unwrap(), None);
    assert!(all(&*b).is_empty());
}

pub fn put_get_delete_revision(open: Opener, dir: &Path) {
    let b = open(dir);
    assert_eq!(put(&*b, &[(b"\x10a", b"1"), (b"\x10b", b"2")]), 1);
    assert_eq!(b.snapshot().unwrap().get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(put(&*b, &[(b"\x10a", b"3")]), 2);
    let mut d = Batch::default();
    d.delete(b"\x10b".to_vec());
    d.delete(b"\x10missing".to_vec());
    assert_eq!(b.apply(&d).unwrap(), 3);
    let s = b.snapshot().unwrap();
    assert_eq!(s.revision(), 3);
    // Read alone, the revision is the snapshots'.
    assert_eq!(b.revision().unwrap(), 3);
    assert_eq!(s.get(b"\x10a").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(s.get(b"\x10b").unwrap(), None);
}

pub fn scans_in_order_with_bounds(open: Opener, dir: &Path) {
    let b = open(dir);
    let keys: Vec<Vec<u8>> =
        [&b"\x10a"[..], b"\x10ab", b"\x10b", b"\x10b\x00", b"\x10b\xff", b"\x10c"].iter().map(|k| k.to_vec()).collect();
    let mut batch = Batch::default();
    for k in keys.iter().rev() {
        batch.put(k.clone(), k.clone());
    }
    b.apply(&batch).unwrap();
    let s = b.snapshot().unwrap();
    let collect = |start: &[u8], end: Option<&[u8]>, rev: bool, limit: usize| {
        let mut out = Vec::new();
        s.scan(start, end, rev, &mut |k, v| {
            assert_eq!(k, v);
            out.push(k.to_vec());
            Ok(out.len() < limit)
        })
        .unwrap();
        out
    };
    assert_eq!(collect(b"\x10", None, false, 100), keys);
    assert_eq!(collect(b"\x10ab", Some(b"\x10b\xff"), false, 100), keys[1..4].to_vec());
    let mut rev = keys[1..4].to_vec();
    rev.reverse();
    assert_eq!(collect(b"\x10ab", Some(b"\x10b\xff"), true, 100), rev);
    assert_eq!(collect(b"\x10", None, false, 2), keys[..2].to_vec());
    // An empty or inverted range holds nothing.
    assert!(collect(b"\x10b", Some(b"\x10b"), false, 100).is_empty());
    assert!(collect(b"\x10c", Some(b"\x10a"), true, 100).is_empty());
    let mut under_b = Vec::new();
    s.scan_prefix(b"\x10b", false, &mut |k, _| {
        under_b.push(k.to_vec());
        Ok(true)
    })
    .unwrap();
    assert_eq!(under_b, keys[2..5].to_vec());
    assert_eq!(s.first_with_prefix(b"\x10b", true).unwrap().unwrap().0, b"\x10b\xff".to_vec());
    assert_eq!(s.first_with_prefix(b"\x10z", false).unwrap(), None);
}

pub fn delete_prefix_removes_exactly_the_subtree(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b""), (b"\x10a\x00\x01x", b""), (b"\x10a\x00\x01y", b""), (b"\x10ab", b""), (b"\x10", b"")]);
    let mut d = Batch::default();
    d.delete_prefix(b"\x10a\x00\x01".to_vec());
    b.apply(&d).unwrap();
    let keys: Vec<Vec<u8>> = all(&*b).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![b"\x10".to_vec(), b"\x10a".to_vec(), b"\x10ab".to_vec()]);
}

pub fn scan_and_delete_from_the_empty_key(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x00meta", b"m"), (b"\x10a", b"1")]);
    let s = b.snapshot().unwrap();
    let mut keys = Vec::new();
    s.scan(&[], None, false, &mut |k, _| {
        keys.push(k.to_vec());
        Ok(true)
    })
    .unwrap();
    assert!(keys.contains(&b"\x00meta".to_vec()) && keys.contains(&b"\x10a".to_vec()), "{keys:?}");
    assert_eq!(s.first_with_prefix(&[], true).unwrap().unwrap().0, b"\x10a".to_vec());
    drop(s);
    let mut d = Batch::default();
    d.delete_prefix(Vec::new());
    assert_eq!(b.apply(&d).unwrap(), 2, "the revision outlives deleting every key");
    let s = b.snapshot().unwrap();
    assert_eq!(s.revision(), 2);
    assert_eq!(s.get(b"\x00meta").unwrap(), None);
    assert!(all(&*b).is_empty());
}

pub fn conflicting_batch_writes_nothing(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b"1")]);
    let mut batch = Batch { expect_revision: Some(0), ops: Vec::new() };
    batch.put(b"\x10b".to_vec(), b"2".to_vec());
    batch.delete(b"\x10a".to_vec());
    let e = b.apply(&batch).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let s = b.snapshot().unwrap();
    assert_eq!(s.revision(), 1);
    assert_eq!(s.get(b"\x10b").unwrap(), None);
    assert!(s.get(b"\x10a").unwrap().is_some());
    batch.expect_revision = Some(1);
    assert_eq!(b.apply(&batch).unwrap(), 2);
}

pub fn write_views_read_then_commit(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b"1")]);
    let reader = b.snapshot().unwrap();
    // A view reads the committed state and commits on top of it.
    let view = b.begin_write().unwrap();
    assert_eq!(view.revision(), 1);
    assert_eq!(view.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    let mut seen = Vec::new();
    view.scan_prefix(b"\x10", false, &mut |k, _| {
        seen.push(k.to_vec());
        Ok(true)
    })
    .unwrap();
    assert_eq!(seen, [b"\x10a".to_vec()]);
    let mut batch = Batch { expect_revision: Some(1), ops: Vec::new() };
    batch.put(b"\x10b".to_vec(), b"2".to_vec());
    batch.delete(b"\x10a".to_vec());
    assert_eq!(view.commit(&batch).unwrap(), 2);
    assert_eq!(reader.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]), "a reader keeps its state");
    drop(reader);
    // Dropped uncommitted: nothing written, and writers go on.
    let view = b.begin_write().unwrap();
    assert_eq!(view.revision(), 2);
    drop(view);
    // A batch built on another revision: refused, nothing written.
    let view = b.begin_write().unwrap();
    let mut stale = Batch { expect_revision: Some(1), ops: Vec::new() };
    stale.put(b"\x10c".to_vec(), b"3".to_vec());
    assert_eq!(view.commit(&stale).unwrap_err().kind(), ErrorKind::Conflict);
    let s = b.snapshot().unwrap();
    assert_eq!(s.revision(), 2);
    assert_eq!(s.get(b"\x10a").unwrap(), None);
    assert_eq!(s.get(b"\x10c").unwrap(), None);
    drop(s);
    // Without an expected revision, the view's own.
    let mut batch = Batch::default();
    batch.put(b"\x10d".to_vec(), b"4".to_vec());
    assert_eq!(b.begin_write().unwrap().commit(&batch).unwrap(), 3);
    assert_eq!(put(&*b, &[(b"\x10e", b"5")]), 4);
    assert_eq!(all(&*b).len(), 3);
}

/// A write view taken at a revision assumed without asking: when that is
/// the store's, it reads and commits as any view; when it is not, its reads
/// show the revision it says or fail as a conflict, and its commit lands only
/// on the revision it says (a backend that asks anyway says the real one).
pub fn write_views_at_a_taken_revision(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b"1")]);
    put(&*b, &[(b"\x10a", b"2")]);
    for hint in [1, 2, 3, 2] {
        let now = b.snapshot().unwrap().revision();
        let value = b.snapshot().unwrap().get(b"\x10a").unwrap();
        let view = b.begin_write_at(hint).unwrap();
        let said = view.revision();
        let read = view.get(b"\x10a");
        let mut batch = Batch::default();
        batch.put(b"\x10w".to_vec(), hint.to_string().into_bytes());
        match view.commit(&batch) {
            Ok(r) => {
                assert_eq!(said, now, "taken at {hint}: committed on a view at {said}, the store at {now}");
                assert_eq!(r, now + 1);
                assert_eq!(read.unwrap(), value);
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
                assert_ne!(said, now, "a view at the store's revision could not commit: {e}");
                if let Err(e) = read {
                    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
                }
                assert_eq!(b.snapshot().unwrap().revision(), now, "a refused commit wrote");
            }
        }
    }
}

pub fn snapshots_are_isolated(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b"1")]);
    let before = b.snapshot().unwrap();
    put(&*b, &[(b"\x10a", b"2"), (b"\x10b", b"2")]);
    assert_eq!(before.revision(), 1);
    assert_eq!(before.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(before.get(b"\x10b").unwrap(), None);
    // Several keys at once, at the snapshot's revision, in the order asked.
    let keys: [&[u8]; 4] = [b"\x10b", b"\x10a", b"\x10zz", b"\x10a"];
    assert_eq!(before.get_many(&keys).unwrap(), vec![None, Some(b"1".to_vec()), None, Some(b"1".to_vec())]);
    assert_eq!(before.get_many(&[]).unwrap(), Vec::<Option<Vec<u8>>>::new());
    let many: Vec<&[u8]> = (0..2500).map(|i| if i % 2 == 0 { &b"\x10a"[..] } else { &b"\x10q"[..] }).collect();
    let got = before.get_many(&many).unwrap();
    assert_eq!(got.len(), 2500);
    assert!(got.iter().enumerate().all(|(i, v)| v.as_deref() == (i % 2 == 0).then_some(&b"1"[..])));
    drop(before);
    assert_eq!(b.snapshot().unwrap().get(b"\x10a").unwrap().as_deref(), Some(&b"2"[..]));
    let now = b.snapshot().unwrap();
    assert_eq!(now.get_many(&keys).unwrap(), vec![Some(b"2".to_vec()), Some(b"2".to_vec()), None, Some(b"2".to_vec())]);
}

/// A brief snapshot reads its revision while the store is there; after
/// another commit its reads show the old data or fail with `Conflict`,
/// never the new data.
pub fn brief_snapshots_never_show_later_commits(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b"1"), (b"\x10b", b"1")]);
    let brief = b.brief_snapshot().unwrap();
    assert_eq!(brief.revision(), 1);
    assert_eq!(brief.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    put(&*b, &[(b"\x10a", b"2"), (b"\x10c", b"2")]);
    match brief.get(b"\x10a") {
        Ok(v) => assert_eq!(v.as_deref(), Some(&b"1"[..])),
        Err(e) => assert_eq!(e.kind(), crate::ErrorKind::Conflict, "{e}"),
    }
    match brief.get_many(&[b"\x10c", b"\x10a"]) {
        Ok(v) => assert_eq!(v, vec![None, Some(b"1".to_vec())]),
        Err(e) => assert_eq!(e.kind(), crate::ErrorKind::Conflict, "{e}"),
    }
    let mut seen = Vec::new();
    match brief.scan(b"\x10", None, false, &mut |k, v| {
        seen.push((k.to_vec(), v.to_vec()));
        Ok(true)
    }) {
        Ok(()) => assert_eq!(seen, vec![(b"\x10a".to_vec(), b"1".to_vec()), (b"\x10b".to_vec(), b"1".to_vec())]),
        Err(e) => assert_eq!(e.kind(), crate::ErrorKind::Conflict, "{e}"),
    }
    drop(brief);
    let now = b.brief_snapshot().unwrap();
    assert_eq!(now.revision(), 2);
    assert_eq!(now.get(b"\x10c").unwrap().as_deref(), Some(&b"2"[..]));
    // At a revision taken for the store's without asking: reads show the
    // revision the snapshot says, or fail as a conflict when that was not
    // the store's.
    for hint in [1, 2, 3] {
        let at = b.brief_snapshot_at(hint).unwrap();
        match at.get_many(&[b"\x10a", b"\x10c"]) {
            Ok(v) => {
                assert_eq!(at.revision(), 2, "taken at {hint}");
                assert_eq!(v, vec![Some(b"2".to_vec()), Some(b"2".to_vec())]);
            }
            Err(e) => {
                assert_eq!(e.kind(), crate::ErrorKind::Conflict, "{e}");
                assert_ne!(hint, 2, "a brief snapshot at the store's revision failed: {e}");
            }
        }
    }
}

/// A snapshot's scans, in both directions and across many pages, see its
/// revision whatever later batches insert, change and delete around and
/// inside the range (backends without native snapshots keep the old state
/// for it).
pub fn snapshot_scans_are_isolated(open: Opener, dir: &Path) {
    let b = open(dir);
    let key = |i: u32| format!("\x10k{i:05}").into_bytes();
    let mut batch = Batch::default();
    for i in (0..3000).step_by(2) {
        batch.put(key(i), format!("old{i}").into_bytes());
    }
    b.apply(&batch).unwrap();
    let snap = b.snapshot().unwrap();
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        (0..3000).step_by(2).map(|i| (key(i), format!("old{i}").into_bytes())).collect();
    for round in 0..3u32 {
        let mut batch = Batch::default();
        for i in (1..3000).step_by(7) {
            batch.put(key(i), b"new".to_vec());
        }
        for i in (0..3000).step_by(10) {
            batch.put(key(i + round), format!("changed{round}").into_bytes());
        }
        batch.delete_prefix(format!("\x10k0{round}").into_bytes());
        batch.delete(key(2998));
        b.apply(&batch).unwrap();
    }
    let scan = |start: &[u8], end: Option<&[u8]>, reverse: bool| {
        let mut out = Vec::new();
        snap.scan(start, end, reverse, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(true)
        })
        .unwrap();
        out
    };
    assert_eq!(snap.revision(), 1);
    assert_eq!(scan(b"\x10", None, false), expected);
    let mut reversed = expected.clone();
    reversed.reverse();
    assert_eq!(scan(b"\x10", None, true), reversed);
    let inner: Vec<_> = expected.iter().filter(|(k, _)| k >= &key(1001) && k < &key(2500)).cloned().collect();
    assert_eq!(scan(&key(1001), Some(&key(2500)), false), inner);
    assert_eq!(snap.get(&key(2998)).unwrap(), Some(b"old2998".to_vec()));
    assert_eq!(snap.get(&key(1)).unwrap(), None);
    assert_eq!(snap.first_with_prefix(b"\x10k00", false).unwrap(), Some((key(0), b"old0".to_vec())));
    drop(snap);
    let now = b.snapshot().unwrap();
    assert_eq!(now.revision(), 4);
    assert_eq!(now.get(&key(2998)).unwrap(), None);
    assert_eq!(now.get(&key(1)).unwrap(), Some(b"new".to_vec()));
}

pub fn survives_reopen(open: Opener, dir: &Path) {
    {
        let b = open(dir);
        put(&*b, &[(b"\x10a", b"1"), (b"\x10b", b"2")]);
        let mut d = Batch::default();
        d.delete(b"\x10b".to_vec());
        // Not flushed, but a clean close keeps it.
        b.apply_unflushed(&d).unwrap();
    }
    let b = open(dir);
    let s = b.snapshot().unwrap();
    assert_eq!(s.revision(), 2);
    assert_eq!(s.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(s.get(b"\x10b").unwrap(), None);
}

/// A batch applied without a flush is applied as any other: atomically, at
/// the expected revision only, one revision on; flushed commits go on after it.
pub fn unflushed_batches_apply_like_others(open: Opener, dir: &Path) {
    let b = open(dir);
    put(&*b, &[(b"\x10a", b"1"), (b"\x10a/x", b"2"), (b"\x10b", b"3")]);
    let mut u = Batch { expect_revision: Some(1), ops: Vec::new() };
    u.put(b"\x10c".to_vec(), b"4".to_vec());
    u.delete_prefix(b"\x10a".to_vec());
    assert_eq!(b.apply_unflushed(&u).unwrap(), 2);
    assert_eq!(all(&*b), vec![(b"\x10b".to_vec(), b"3".to_vec()), (b"\x10c".to_vec(), b"4".to_vec())]);
    let stale = Batch { expect_revision: Some(1), ops: vec![BatchOp::Put(b"\x10d".to_vec(), b"5".to_vec())] };
    assert_eq!(b.apply_unflushed(&stale).unwrap_err().kind(), ErrorKind::Conflict);
    assert_eq!(put(&*b, &[(b"\x10d", b"6")]), 3);
    assert_eq!(b.snapshot().unwrap().get(b"\x10d").unwrap().as_deref(), Some(&b"6"[..]));
}

pub fn values_from_empty_to_16_mib(open: Opener, dir: &Path) {
    let b = open(dir);
    let big: Vec<u8> = (0..16 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    put(&*b, &[(b"\x10empty", b""), (b"\x10big", &big)]);
    let s = b.snapshot().unwrap();
    assert_eq!(s.get(b"\x10empty").unwrap().as_deref(), Some(&b""[..]));
    assert_eq!(s.get(b"\x10big").unwrap().as_deref(), Some(&big[..]));
}

pub fn many_small_keys(open: Opener, dir: &Path) {
    let b = open(dir);
    let n = 200_000u32;
    let mut batch = Batch::default();
    for i in 0..n {
        let mut k = b"\x10k".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        batch.put(k, i.to_le_bytes().to_vec());
    }
    b.apply(&batch).unwrap();
    let s = b.snapshot().unwrap();
    let mut count = 0u32;
    s.scan_prefix(b"\x10k", false, &mut |k, v| {
        assert_eq!(&k[2..], &count.to_be_bytes());
        assert_eq!(v, &count.to_le_bytes());
        count += 1;
        Ok(true)
    })
    .unwrap();
    assert_eq!(count, n);
    drop(s);
    let mut d = Batch::default();
    d.delete_prefix(b"\x10k".to_vec());
    b.apply(&d).unwrap();
    assert!(all(&*b).is_empty());
}

pub fn readers_run_during_writes(open: Opener, dir: &Path) {
    let b: std::sync::Arc<dyn Backend> = std::sync::Arc::from(open(dir));
    put(&*b, &[(b"\x10x", &0u64.to_be_bytes()), (b"\x10y", &0u64.to_be_bytes())]);
    let writer = {
        let b = b.clone();
        std::thread::spawn(move || {
            for i in 1..=200u64 {
                put(&*b, &[(b"\x10x", &i.to_be_bytes()), (b"\x10y", &i.to_be_bytes())]);
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let b = b.clone();
            std::thread::spawn(move || {
                for _ in 0..500 {
                    let s = b.snapshot().unwrap();
                    // Both keys are written by every batch: a snapshot sees them equal.
                    assert_eq!(s.get(b"\x10x").unwrap(), s.get(b"\x10y").unwrap());
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(b.snapshot().unwrap().revision(), 201);
}

pub fn compact_keeps_data(open: Opener, dir: &Path) {
    let b = open(dir);
    let mut batch = Batch::default();
    for i in 0..20_000u32 {
        batch.put(format!("\x10k{i:08}").into_bytes(), vec![7; 100]);
    }
    b.apply(&batch).unwrap();
    let mut d = Batch::default();
    d.delete_prefix(b"\x10k0001".to_vec());
    b.apply(&d).unwrap();
    let before = all(&*b);
    let rev = b.snapshot().unwrap().revision();
    b.compact().unwrap();
    assert_eq!(all(&*b), before);
    assert_eq!(b.snapshot().unwrap().revision(), rev);
    put(&*b, &[(b"\x10after", b"1")]);
    assert_eq!(b.snapshot().unwrap().get(b"\x10after").unwrap().as_deref(), Some(&b"1"[..]));
}

/// Expands the suite for one backend: `conformance_tests!(opener, persistent = bool)`.
/// A backend that needs a server adds `when = expr`: each test returns at
/// once, passing, when `expr` is false (the server is not configured; the
/// expression says so itself).
#[macro_export]
macro_rules! conformance_tests {
    ($open:expr, persistent = $persistent:expr) => {
        $crate::conformance_tests!($open, persistent = $persistent, when = true);
    };
    ($open:expr, persistent = $persistent:expr, when = $when:expr) => {
        $crate::conformance_tests!(@tests $open, $when;
            empty_store, put_get_delete_revision, scans_in_order_with_bounds,
            delete_prefix_removes_exactly_the_subtree, scan_and_delete_from_the_empty_key, conflicting_batch_writes_nothing,
            write_views_read_then_commit, write_views_at_a_taken_revision, unflushed_batches_apply_like_others,
            snapshots_are_isolated, snapshot_scans_are_isolated, brief_snapshots_never_show_later_commits,
            values_from_empty_to_16_mib, many_small_keys,
            readers_run_during_writes, compact_keeps_data);
        #[test]
        fn survives_reopen() {
            if $persistent && $when {
                let dir = tempfile::tempdir().unwrap();
                $crate::conformance::survives_reopen(&$open, dir.path());
            }
        }
    };
    // A backend whose server cannot hold `many_small_keys` (200,000 keys in
    // one commit) in reasonable time: the test is `#[ignore]`d with the
    // reason (cargo reports it; `--ignored` runs it), the rest as above.
    ($open:expr, persistent = $persistent:expr, when = $when:expr, ignore_many_small_keys = $why:literal) => {
        $crate::conformance_tests!(@tests $open, $when;
            empty_store, put_get_delete_revision, scans_in_order_with_bounds,
            delete_prefix_removes_exactly_the_subtree, scan_and_delete_from_the_empty_key, conflicting_batch_writes_nothing,
            write_views_read_then_commit, write_views_at_a_taken_revision, unflushed_batches_apply_like_others,
            snapshots_are_isolated, snapshot_scans_are_isolated, brief_snapshots_never_show_later_commits,
            values_from_empty_to_16_mib, readers_run_during_writes, compact_keeps_data);
        #[test]
        #[ignore = $why]
        fn many_small_keys() {
            if $when {
                let dir = tempfile::tempdir().unwrap();
                $crate::conformance::many_small_keys(&$open, dir.path());
            }
        }
        #[test]
        fn survives_reopen() {
            if $persistent && $when {
                let dir = tempfile::tempdir().unwrap();
                $crate::conformance::survives_reopen(&$open, dir.path());
            }
        }
    };
    (@tests $open:expr, $when:expr; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                if !$when {
                    return;
                }
                let dir = tempfile::tempdir().unwrap();
                $crate::conformance::$name(&$open, dir.path());
            }
        )*
    };
}

/// The lease contract of a backend that keeps leases ([`Backend::lease`]),
/// on two handles of one store (`a`, `b`: as two processes would open it):
/// a lease is held for both while it lives, another identity is not; a
/// lease ended on the server by `end_on_server` (what a holder that stopped
/// renewing, or whose connection broke, comes to) is reported lost by its
/// holder and no longer held for anyone; dropping a lease ends it. Polls
/// with a bound of a minute where the server acts on its own.
pub fn check_leases(a: &dyn Backend, b: &dyn Backend, end_on_server: &dyn Fn(u64)) {
    use std::time::{Duration, Instant};
    let eventually = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within a minute");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    assert!(a.leases() && b.leases());
    let first = a.lease().unwrap();
    let second = a.lease().unwrap();
    let (x, y) = (first.id(), second.id());
    assert!(x != y && x > 0 && y > 0 && i64::try_from(x).is_ok());
    let never = crate::lease::random_id();
    assert_eq!(b.leases_held(&[x, never, y]).unwrap(), vec![true, false, true]);
    assert_eq!(a.leases_held(&[]).unwrap(), Vec::<bool>::new());
    assert!(!first.lost() && !second.lost());

    end_on_server(x);
    eventually("the holder sees its lease lost", &|| first.lost());
    assert_eq!(b.leases_held(&[x, y]).unwrap(), vec![false, true], "the other lease is untouched");
    assert!(!second.lost());
    drop(first);

    drop(second);
    eventually("a dropped lease ends", &|| b.leases_held(&[y]).unwrap() == vec![false]);
}
