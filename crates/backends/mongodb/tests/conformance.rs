//! The conformance suite against the server `CANOPY_MONGODB_URL` names
//! (`eval "$(scripts/servers.sh start mongodb)"`), each test in its own
//! database, in both sync modes. `many_small_keys` is ignored: the
//! MongoDB-wire server the scripts start (SecantusDB) spends over 15
//! minutes on its commit of 200,000 keys (`--ignored` runs it).

use canopy_store::conformance::{namespace_of, server_url, with_params};
use canopy_store::{Backend, StoreUrl};

fn server() -> Option<String> {
    server_url("CANOPY_MONGODB_URL")
}

/// The store of the test directory `dir`: a database named after it.
fn open(dir: &std::path::Path, params: &str) -> Box<dyn Backend> {
    let mut url = url::Url::parse(&server().expect("checked by the test")).unwrap();
    url.set_path(&namespace_of("t_", dir));
    let url = with_params(url.as_str(), params);
    Box::new(canopy_mongodb::MongoBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap())
}

mod sync_commit {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> { open(dir, "sync=commit&timeout=600s") },
        persistent = true,
        when = server().is_some(),
        ignore_many_small_keys =
            "SecantusDB, the server the scripts start, takes over 15 minutes for it (docs/backends.md)"
    );
}

mod sync_off {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> { open(dir, "sync=off&timeout=600s") },
        persistent = true,
        when = server().is_some(),
        ignore_many_small_keys =
            "SecantusDB, the server the scripts start, takes over 15 minutes for it (docs/backends.md)"
    );
}
