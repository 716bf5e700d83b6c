//! Unreachable servers, refused logins and foreign keys give clear errors
//! naming the server, never its password, and never a panic.

use std::time::Instant;

use canopy_redis::RedisBackend;
use canopy_store::{ErrorKind, StoreError, StoreUrl};

fn open(url: &str) -> Result<RedisBackend, StoreError> {
    RedisBackend::open_url(&StoreUrl::parse(url)?)
}

fn server() -> Option<String> {
    canopy_store::conformance::server_url("CANOPY_REDIS_URL")
}

#[test]
fn an_unreachable_server_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = open(&format!("redis://:secret@127.0.0.1:{port}/0")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")) && text.contains("unreachable"), "{text}");
    assert!(!text.contains("secret"), "{text}");
    // A server that accepts and never answers: timed out, not a hang.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let e = open(&format!("redis://:secret@127.0.0.1:{port}/0?timeout=300ms&connect_timeout=300ms")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")) && !e.to_string().contains("secret"), "{e}");
    assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
}

#[test]
fn a_wrong_password_is_refused_without_showing_it() {
    let Some(server) = server() else { return };
    let mut wrong = url::Url::parse(&server).unwrap();
    wrong.set_password(Some("not-the-password")).unwrap();
    let e = open(wrong.as_str()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(!e.to_string().contains("not-the-password"), "{e}");
}

#[test]
fn keys_of_another_kind_under_the_prefix_are_refused() {
    let Some(server) = server() else { return };
    let client = redis::Client::open(server.as_str()).unwrap();
    let mut conn = client.get_connection().unwrap();
    redis::cmd("SET").arg("{foreign}:k").arg("a string").query::<()>(&mut conn).unwrap();
    let e = open(&format!("{server}?prefix=foreign")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("not a canopy store"), "{e}");
}
