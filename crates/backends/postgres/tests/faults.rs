//! The server ending canopy's connections (as a restart or an administrator
//! does): the next transaction reconnects by itself and nothing committed is
//! lost.

use canopy_postgres::PostgresBackend;
use canopy_store::conformance::{server_url, with_params};
use canopy_store::{Backend, Batch, StoreUrl};

#[test]
fn connections_ended_by_the_server_are_replaced() {
    let Some(server) = server_url("CANOPY_POSTGRES_URL") else { return };
    let app = format!("canopy_faults_{}", std::process::id());
    let url = with_params(&server, &format!("schema=f_{}&application_name={app}", std::process::id()));
    let b = PostgresBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let mut admin = postgres::Client::connect(&server, postgres::NoTls).unwrap();
    for round in 1..=3u64 {
        let mut batch = Batch::default();
        batch.put(format!("\x10k{round}").into_bytes(), b"v".to_vec());
        assert_eq!(b.apply(&batch).unwrap(), round);
        // Several pooled connections.
        let (s1, s2) = (b.snapshot().unwrap(), b.snapshot().unwrap());
        drop((s1, s2));
        let ended: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                &[&app],
            )
            .unwrap()
            .get(0);
        assert!(ended >= 2, "{ended} connections ended");
        // Until the server has ended them all.
        while admin
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", &[&app])
            .unwrap()
            .get::<_, i64>(0)
            > 0
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let s = b.snapshot().unwrap();
        assert_eq!(s.revision(), round);
        for r in 1..=round {
            assert_eq!(s.get(format!("\x10k{r}").as_bytes()).unwrap().as_deref(), Some(&b"v"[..]));
        }
    }
}
