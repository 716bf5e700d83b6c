//! Bad URLs, unreachable servers, refused logins and foreign tables give clear
//! errors naming the server, never its password, and never a panic.

use std::time::Instant;

use canopy_postgres::PostgresBackend;
use canopy_store::{ErrorKind, StoreError, StoreUrl};

fn open(url: &str) -> Result<PostgresBackend, StoreError> {
    PostgresBackend::open_url(&StoreUrl::parse(url)?)
}

fn server() -> Option<String> {
    canopy_store::conformance::server_url("CANOPY_POSTGRES_URL")
}

#[test]
fn bad_urls_are_refused() {
    for (url, says) in [
        ("postgres://me:secret@h/db?schema=a;drop", "schema"),
        ("postgres://me:secret@h/db?colour=red", "unknown parameter `colour`"),
        ("postgres://me:secret@h/db?sync=maybe", "sync"),
        ("postgres://me:secret@h:99999/db", "port"),
        ("postgres://me:secret@h/db?connect_timeout=soon", "connect_timeout"),
    ] {
        let e = open(url).err().expect(url);
        assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{url}: {e}");
        assert!(e.to_string().contains(says), "{url}: {e}");
        assert!(!e.to_string().contains("secret"), "{e}");
    }
    let e = open("postgres://me:secret@h/db?sslmode=require").err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
}

#[test]
fn an_unreachable_server_is_unavailable() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = open(&format!("postgres://me:secret@127.0.0.1:{port}/db")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")) && text.contains("unreachable"), "{text}");
    assert!(!text.contains("secret"), "{text}");
    // A server that accepts the connection and never answers: the connect
    // timeout, not a hang.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let e = open(&format!("postgres://me:secret@127.0.0.1:{port}/db?connect_timeout=300ms")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
}

#[test]
fn a_wrong_password_is_refused_without_showing_it() {
    let Some(server) = server() else { return };
    let url = url::Url::parse(&server).unwrap();
    let mut wrong = url.clone();
    wrong.set_password(Some("not-the-password")).unwrap();
    let e = open(wrong.as_str()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("password authentication failed"), "{e}");
    assert!(!e.to_string().contains("not-the-password"), "{e}");
    let mut no_db = url.clone();
    no_db.set_path("/no_such_database");
    let e = open(no_db.as_str()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("no_such_database"), "{e}");
}

#[test]
fn a_table_of_another_shape_is_refused() {
    let Some(server) = server() else { return };
    let mut client = postgres::Client::connect(&server, postgres::NoTls).unwrap();
    client
        .batch_execute(
            "DROP SCHEMA IF EXISTS foreign_shape CASCADE; CREATE SCHEMA foreign_shape; \
             CREATE TABLE foreign_shape.canopy_kv(key text, value text)",
        )
        .unwrap();
    let e = open(&format!("{server}?schema=foreign_shape")).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("key text, value text"), "{e}");
}
