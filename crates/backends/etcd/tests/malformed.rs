//! Bad URLs and unreachable servers give clear errors naming the server,
//! never a panic; a commit over the server's limits fails whole.

use std::time::Instant;

use canopy_etcd::EtcdBackend;
use canopy_store::{Backend, Batch, ErrorKind, StoreError, StoreUrl};

fn open(url: &str) -> Result<EtcdBackend, StoreError> {
    EtcdBackend::open_url(&StoreUrl::parse(url)?)
}

#[test]
fn bad_urls_are_refused() {
    for (url, kind, says) in [
        ("etcd://127.0.0.1:2379?prefix=a/b", ErrorKind::InvalidUrl, "prefix"),
        ("etcd://127.0.0.1:2379/path", ErrorKind::InvalidUrl, "no path"),
        ("etcd://127.0.0.1:2379?schema=x", ErrorKind::InvalidUrl, "unknown parameter `schema`"),
        ("etcd://me:secret@127.0.0.1:2379", ErrorKind::Unsupported, "authentication"),
    ] {
        let e = open(url).err().expect(url);
        assert_eq!(e.kind(), kind, "{url}: {e}");
        assert!(e.to_string().contains(says) && !e.to_string().contains("secret"), "{url}: {e}");
    }
}

#[test]
fn an_unreachable_server_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = open(&format!("etcd://127.0.0.1:{port}")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")) && e.to_string().contains("unreachable"), "{e}");
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let e = open(&format!("etcd://127.0.0.1:{port}?timeout=300ms")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("timed out"), "{e}");
    assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
}

#[test]
fn a_big_batch_is_atomic() {
    let Some(server) = canopy_store::conformance::server_url("CANOPY_ETCD_URL") else { return };
    let ns = format!("big_{:x}", std::process::id());
    let b = open(&format!("{server}?prefix={ns}")).unwrap();
    let mut batch = Batch::default();
    for i in 0..5000u32 {
        batch.put(format!("\x10k{i:05}").into_bytes(), vec![1; 100]);
    }
    batch.delete_prefix(b"\x10k001".to_vec());
    batch.put(b"\x10k00150".to_vec(), b"after".to_vec());
    assert_eq!(b.apply(&batch).unwrap(), 1);
    let s = b.snapshot().unwrap();
    let mut n = 0;
    s.scan_prefix(b"\x10k", false, &mut |_, _| {
        n += 1;
        Ok(true)
    })
    .unwrap();
    assert_eq!(n, 5000 - 100 + 1);
    assert_eq!(s.get(b"\x10k00150").unwrap().as_deref(), Some(&b"after"[..]));
}
