//! The json backend passes the conformance suite, in both sync modes: records
//! that are not canopy data round-trip through `canopy:raw`.

use canopy_file::{json::JsonFormat, FileBackend};
use canopy_store::{Backend, SyncMode};

mod json_sync_commit {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> {
            Box::new(FileBackend::open(&dir.join("store.json"), &JsonFormat, SyncMode::Commit).unwrap())
        },
        persistent = true
    );
}

mod json_sync_off {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> {
            Box::new(FileBackend::open(&dir.join("store.json"), &JsonFormat, SyncMode::Off).unwrap())
        },
        persistent = true
    );
}
