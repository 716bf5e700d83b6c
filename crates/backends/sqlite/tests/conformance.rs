//! SQLite passes the conformance suite, in both sync modes.

use canopy_store::{Backend, SyncMode};

mod sync_commit {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> {
            Box::new(canopy_sqlite::SqliteBackend::open(&dir.join("store.db"), SyncMode::Commit).unwrap())
        },
        persistent = true
    );
}

mod sync_off {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> {
            Box::new(canopy_sqlite::SqliteBackend::open(&dir.join("store.db"), SyncMode::Off).unwrap())
        },
        persistent = true
    );
}
