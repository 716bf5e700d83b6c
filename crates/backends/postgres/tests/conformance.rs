//! PostgreSQL passes the conformance suite against the server
//! `CANOPY_POSTGRES_URL` names (`eval "$(scripts/servers.sh start postgres)"`),
//! each test in its own schema, in both sync modes.

use canopy_store::conformance::{namespace_of, server_url, with_params};
use canopy_store::{Backend, StoreUrl};

fn server() -> Option<String> {
    server_url("CANOPY_POSTGRES_URL")
}

/// The store of the test directory `dir`: a schema named after it.
fn open(dir: &std::path::Path, params: &str) -> Box<dyn Backend> {
    let server = server().expect("checked by the test");
    let url = with_params(&server, &format!("schema={}{params}", namespace_of("t_", dir)));
    Box::new(canopy_postgres::PostgresBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap())
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
