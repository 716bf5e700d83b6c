//! etcd passes the conformance suite against the server `CANOPY_ETCD_URL`
//! names (`eval "$(scripts/servers.sh start etcd)"`, which raises the
//! server's transaction limits for the suite's 200,000-key and 16 MiB
//! batches), each test under its own key prefix.

use canopy_store::conformance::{namespace_of, server_url, with_params};
use canopy_store::{Backend, StoreUrl};

fn server() -> Option<String> {
    server_url("CANOPY_ETCD_URL")
}

/// The store of the test directory `dir`: a prefix named after it.
fn open(dir: &std::path::Path) -> Box<dyn Backend> {
    let server = server().expect("checked by the test");
    let url = with_params(&server, &format!("prefix={}", namespace_of("t_", dir)));
    Box::new(canopy_etcd::EtcdBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap())
}

canopy_store::conformance_tests!(
    |dir: &std::path::Path| -> Box<dyn Backend> { open(dir) },
    persistent = true,
    when = server().is_some()
);
