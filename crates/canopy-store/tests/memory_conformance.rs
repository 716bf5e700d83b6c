//! The in-memory backend passes the conformance suite.

canopy_store::conformance_tests!(
    |_dir: &std::path::Path| -> Box<dyn canopy_store::Backend> { Box::new(canopy_store::memory::MemoryBackend::new()) },
    persistent = false
);
