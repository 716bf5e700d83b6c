//! Leases (session-level advisory locks): held for every handle of the
//! store while their holder lives; a session the server ends (an
//! administrator, a restart, `idle_session_timeout`) loses its lease.

use canopy_postgres::PostgresBackend;
use canopy_store::conformance::{check_leases, server_url, with_params};
use canopy_store::StoreUrl;

#[test]
fn leases_follow_the_contract() {
    let Some(server) = server_url("CANOPY_POSTGRES_URL") else { return };
    let url = with_params(&server, &format!("schema=leases_{}", std::process::id()));
    let open = || PostgresBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let (a, b) = (open(), open());
    let admin = std::sync::Mutex::new(postgres::Client::connect(&server, postgres::NoTls).unwrap());
    check_leases(&a, &b, &|id| {
        let ended: i64 = admin
            .lock()
            .unwrap()
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' \
                 AND classid = ($1::int8 >> 32)::oid AND objid = ($1::int8 & 4294967295)::oid AND objsubid = 1",
                &[&(id as i64)],
            )
            .unwrap()
            .get(0);
        assert_eq!(ended, 1, "the session holding lease {id}");
    });
}
