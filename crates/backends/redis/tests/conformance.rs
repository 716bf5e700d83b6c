//! Redis passes the conformance suite against the server `CANOPY_REDIS_URL`
//! names (`eval "$(scripts/servers.sh start redis)"`), each test under its
//! own key prefix, in both sync modes.

use canopy_store::conformance::{namespace_of, server_url, with_params};
use canopy_store::{Backend, StoreUrl};

fn server() -> Option<String> {
    server_url("CANOPY_REDIS_URL")
}

/// The store of the test directory `dir`: a prefix named after it.
fn open(dir: &std::path::Path, params: &str) -> Box<dyn Backend> {
    let server = server().expect("checked by the test");
    let url = with_params(&server, &format!("prefix={}{params}", namespace_of("t_", dir)));
    Box::new(canopy_redis::RedisBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap())
}

mod sync_commit {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> { open(dir, "") },
        persistent = true,
        when = server().is_some()
    );
}

mod sync_off {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> { open(dir, "&sync=off") },
        persistent = true,
        when = server().is_some()
    );
}

/// A write's view registers no snapshot: read before another writer's
/// commit it sees its revision; read after, it fails with `Conflict` (it
/// cannot see its revision any more, and its commit would conflict), and its
/// commit is refused, writing nothing. Registered snapshots still read
/// their revision after that commit.
#[test]
fn write_views_fail_as_conflicts_once_the_store_moved_on() {
    if server().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), "");
    let put = |k: &[u8], v: &[u8]| {
        let mut batch = canopy_store::Batch::default();
        batch.put(k.to_vec(), v.to_vec());
        b.apply(&batch).unwrap()
    };
    assert_eq!(put(b"\x10a", b"1"), 1);
    let reader = b.snapshot().unwrap();
    let view = b.begin_write().unwrap();
    assert_eq!(view.revision(), 1);
    assert_eq!(view.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(put(b"\x10a", b"2"), 2);
    assert_eq!(view.get(b"\x10a").unwrap_err().kind(), canopy_store::ErrorKind::Conflict);
    let scanned = view.scan_prefix(b"\x10", false, &mut |_, _| Ok(true));
    assert_eq!(scanned.unwrap_err().kind(), canopy_store::ErrorKind::Conflict);
    let mut batch = canopy_store::Batch::default();
    batch.put(b"\x10b".to_vec(), b"3".to_vec());
    assert_eq!(view.commit(&batch).unwrap_err().kind(), canopy_store::ErrorKind::Conflict);
    assert_eq!(reader.get(b"\x10a").unwrap().as_deref(), Some(&b"1"[..]));
    let now = b.snapshot().unwrap();
    assert_eq!((now.revision(), now.get(b"\x10b").unwrap()), (2, None));
}
