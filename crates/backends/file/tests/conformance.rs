//! The snapshot backend passes the conformance suite, in both sync modes.

use canopy_file::{snapshot::SnapshotFormat, FileBackend};
use canopy_store::{Backend, SyncMode};

mod snapshot_sync_commit {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> {
            Box::new(FileBackend::open(&dir.join("store.snap"), &SnapshotFormat, SyncMode::Commit).unwrap())
        },
        persistent = true
    );
}

mod snapshot_sync_off {
    use super::*;
    canopy_store::conformance_tests!(
        |dir: &std::path::Path| -> Box<dyn Backend> {
            Box::new(FileBackend::open(&dir.join("store.snap"), &SnapshotFormat, SyncMode::Off).unwrap())
        },
        persistent = true
    );
}
