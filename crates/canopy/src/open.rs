//! The backend factory: a store URL names a backend and where its data lives.

use canopy_store::{Backend, ErrorKind, StoreError, StoreUrl};

use crate::error::Result;

/// The default store location of the CLI.
pub const DEFAULT_STORE: &str = "./canopy-data";

/// Backends this build knows, enabled or not.
const KNOWN: &[&str] =
    &["lmdb", "memory", "json", "snapshot", "sqlite", "postgres", "postgresql", "redis", "etcd", "mongodb", "canopy"];

/// Opens the backend a URL names. Parameters the engine reads (`cache`) are
/// removed before the backend sees the URL.
///
/// # Errors
/// `InvalidUrl` for an unknown scheme or parameter; `Unsupported` for a known
/// backend not built into this binary; the backend's own errors.
pub fn open_backend(url: &StoreUrl) -> Result<Box<dyn Backend>> {
    let scheme = url.scheme.as_deref().unwrap_or("lmdb");
    match scheme {
        #[cfg(feature = "backend-lmdb")]
        "lmdb" => Ok(Box::new(canopy_lmdb::LmdbBackend::open_url(url)?)),
        #[cfg(feature = "backend-sqlite")]
        "sqlite" => Ok(Box::new(canopy_sqlite::SqliteBackend::open_url(url)?)),
        #[cfg(feature = "backend-file")]
        "snapshot" | "json" => Ok(Box::new(canopy_file::FileBackend::open_url(url)?)),
        #[cfg(feature = "backend-postgres")]
        "postgres" | "postgresql" => Ok(Box::new(canopy_postgres::PostgresBackend::open_url(url)?)),
        #[cfg(feature = "backend-redis")]
        "redis" => Ok(Box::new(canopy_redis::RedisBackend::open_url(url)?)),
        #[cfg(feature = "backend-etcd")]
        "etcd" => Ok(Box::new(canopy_etcd::EtcdBackend::open_url(url)?)),
        #[cfg(feature = "backend-mongodb")]
        "mongodb" => Ok(Box::new(canopy_mongodb::MongoBackend::open_url(url)?)),
        "memory" => {
            url.check_params(&[])?;
            Ok(Box::new(canopy_store::memory::MemoryBackend::new()))
        }
        s if KNOWN.contains(&s) => Err(StoreError::new(
            ErrorKind::Unsupported,
            format!("backend `{s}` is not enabled in this build (store URL `{}`)", url.redacted()),
        )
        .into()),
        s => Err(StoreError::new(
            ErrorKind::InvalidUrl,
            format!("invalid store URL `{}`: unknown backend `{s}` (known: {})", url.redacted(), KNOWN.join(", ")),
        )
        .into()),
    }
}
