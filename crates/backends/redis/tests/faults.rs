//! The server closing canopy's connections (as a restart does): the next
//! command reconnects by itself and nothing committed is lost.

use canopy_redis::RedisBackend;
use canopy_store::conformance::{server_url, with_params};
use canopy_store::{Backend, Batch, StoreUrl};

#[test]
fn connections_closed_by_the_server_are_replaced() {
    let Some(server) = server_url("CANOPY_REDIS_URL") else { return };
    let prefix = format!("faults_{}", std::process::id());
    let b =
        RedisBackend::open_url(&StoreUrl::parse(&with_params(&server, &format!("prefix={prefix}"))).unwrap()).unwrap();
    let client = redis::Client::open(server.as_str()).unwrap();
    let mut admin = client.get_connection().unwrap();
    let name = format!("canopy:{{{prefix}}}");
    for round in 1..=3u64 {
        let mut batch = Batch::default();
        batch.put(format!("\x10k{round}").into_bytes(), b"v".to_vec());
        assert_eq!(b.apply(&batch).unwrap(), round);
        let (s1, s2) = (b.snapshot().unwrap(), b.snapshot().unwrap());
        drop((s1, s2));
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin).unwrap();
        let ids: Vec<&str> = list
            .lines()
            .filter(|l| l.split(' ').any(|f| f == format!("name={name}")))
            .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
            .collect();
        assert!(!ids.is_empty(), "no connection named {name} in {list}");
        for id in ids {
            let _: redis::Value = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut admin).unwrap();
        }
        let s = b.snapshot().unwrap();
        assert_eq!(s.revision(), round);
        for r in 1..=round {
            assert_eq!(s.get(format!("\x10k{r}").as_bytes()).unwrap().as_deref(), Some(&b"v"[..]));
        }
    }
}
