//! Leases (etcd leases with a key attached): held for every handle of the
//! store while their holder keeps them alive; a lease revoked or expired on
//! the server is lost.

use canopy_etcd::EtcdBackend;
use canopy_store::conformance::{check_leases, server_url, with_params};
use canopy_store::StoreUrl;

#[test]
fn leases_follow_the_contract() {
    let Some(server) = server_url("CANOPY_ETCD_URL") else { return };
    let url = with_params(&server, &format!("prefix=leases_{}&lease=2s", std::process::id()));
    let open = || EtcdBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let (a, b) = (open(), open());
    let gateway = server.replacen("etcd://", "http://", 1);
    let gateway = gateway.split('?').next().unwrap().trim_end_matches('/').to_string();
    check_leases(&a, &b, &|id| {
        ureq::post(&format!("{gateway}/v3/lease/revoke"))
            .send_string(&format!("{{\"ID\": {id}}}"))
            .unwrap_or_else(|e| panic!("revoke lease {id}: {e}"));
    });
}
