//! Leases (documents whose expiry their holder renews): held for every
//! handle of the store while their holder renews them; a document gone from
//! the server is a lost lease. And announcements: a change stream of the
//! revision document hears every commit, another handle's too.

use std::io::{Read, Write};
use std::time::Duration;

use bson::{doc, Document};
use canopy_mongodb::MongoBackend;
use canopy_store::conformance::{check_leases, namespace_of, server_url, with_params};
use canopy_store::{Backend, Batch, StoreUrl};

/// The URL of a store of its own on the test server, named after `dir`.
fn store_url(server: &str, dir: &std::path::Path, params: &str) -> String {
    let mut url = url::Url::parse(server).unwrap();
    url.set_path(&namespace_of("l_", dir));
    with_params(url.as_str(), params)
}

/// One command over the wire protocol (`OP_MSG`), as another client would
/// send it; the reply must say `ok`.
fn command(server: &str, cmd: &Document) -> Document {
    let url = url::Url::parse(server).unwrap();
    let addr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(27017));
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let body = cmd.to_vec().unwrap();
    let len = 16 + 4 + 1 + body.len();
    let mut msg = Vec::with_capacity(len);
    for field in [len as i32, 1, 0, 2013, 0] {
        msg.extend_from_slice(&field.to_le_bytes());
    }
    msg.push(0);
    msg.extend_from_slice(&body);
    s.write_all(&msg).unwrap();
    let mut header = [0u8; 16];
    s.read_exact(&mut header).unwrap();
    let mut rest = vec![0u8; i32::from_le_bytes(header[..4].try_into().unwrap()) as usize - 16];
    s.read_exact(&mut rest).unwrap();
    let reply = Document::from_reader(&rest[5..]).unwrap();
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{cmd}: {reply}");
    reply
}

#[test]
fn leases_follow_the_contract() {
    let Some(server) = server_url("CANOPY_MONGODB_URL") else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = store_url(&server, dir.path(), "lease=2s");
    let db = url::Url::parse(&url).unwrap().path().trim_start_matches('/').to_string();
    let open = || MongoBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let (a, b) = (open(), open());
    let indexes = |db: &str| {
        let reply = command(&server, &doc! {"listIndexes": "leases", "cursor": {}, "$db": db});
        reply.get_document("cursor").unwrap().get_array("firstBatch").unwrap().clone()
    };
    check_leases(&a, &b, &|id| {
        // The backstop: the server deletes expired lease documents.
        let ttl = indexes(&db).iter().filter_map(|i| i.as_document()).any(|i| {
            i.get_document("key").is_ok_and(|k| k.contains_key("expires")) && i.get("expireAfterSeconds").is_some()
        });
        assert!(ttl, "a TTL index on `expires` in {:?}", indexes(&db));
        let delete = doc! {"delete": "leases", "deletes": [{"q": {"_id": id as i64}, "limit": 1}], "$db": &db};
        assert_eq!(command(&server, &delete).get_i32("n").unwrap(), 1, "the document of lease {id}");
    });
}

#[test]
fn a_lease_time_out_of_range_is_refused() {
    for url in ["mongodb://h/db?lease=0s", "mongodb://h/db?lease=2h", "mongodb://h/db?lease=soon"] {
        let e = MongoBackend::open_url(&StoreUrl::parse(url).unwrap()).err().unwrap();
        assert_eq!(e.kind(), canopy_store::ErrorKind::InvalidUrl, "{url}: {e}");
    }
}

/// Commits of another handle are heard with their revisions, in order.
#[test]
fn commits_are_announced() {
    let Some(server) = server_url("CANOPY_MONGODB_URL") else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = StoreUrl::parse(&store_url(&server, dir.path(), "")).unwrap();
    let (a, b) = (MongoBackend::open_url(&url).unwrap(), MongoBackend::open_url(&url).unwrap());
    assert!(b.announces());
    let mut heard = b.announcements().unwrap();
    let mut committed = Vec::new();
    for i in 0..3u8 {
        let mut batch = Batch::default();
        batch.put(vec![b'k', i], vec![i]);
        committed.push(a.apply(&batch).unwrap());
    }
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while got.len() < committed.len() && std::time::Instant::now() < deadline {
        got.extend(heard.next(Duration::from_secs(1)).unwrap());
    }
    assert_eq!(got, committed);
    drop(heard);
}
