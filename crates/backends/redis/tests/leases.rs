//! Leases (keys with an expiry): held for every handle of the store while
//! their holder renews them; a key gone from the server is a lost lease.

use canopy_redis::RedisBackend;
use canopy_store::conformance::{check_leases, server_url, with_params};
use canopy_store::StoreUrl;

#[test]
fn leases_follow_the_contract() {
    let Some(server) = server_url("CANOPY_REDIS_URL") else { return };
    let prefix = format!("leases_{}", std::process::id());
    let url = with_params(&server, &format!("prefix={prefix}&lease=2s"));
    let open = || RedisBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let (a, b) = (open(), open());
    let admin = std::sync::Mutex::new(redis::Client::open(server.as_str()).unwrap().get_connection().unwrap());
    check_leases(&a, &b, &|id| {
        let removed: i64 =
            redis::cmd("DEL").arg(format!("{{{prefix}}}:lease:{id}")).query(&mut *admin.lock().unwrap()).unwrap();
        assert_eq!(removed, 1, "the key of lease {id}");
    });
}
