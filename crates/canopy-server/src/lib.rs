//! `canopy serve`: a canopy store over HTTP.
//!
//! RESTCONF (RFC 8040) on `/restconf`, the NMDA datastores (RFC 8527) on
//! `/restconf/ds/…`, YANG Patch (RFC 8072), change streams as Server-Sent
//! Events on `/restconf/streams/…`. Every resource has an `ETag` and a
//! `Last-Modified` that change when it or anything below it changes, and only
//! then; writes honour `If-Match` and `If-Unmodified-Since`, and answer with
//! the commit's revision (`Canopy-Revision`).
//!
//! The server adds transport, not logic: it calls the same [`canopy::Session`]
//! API the CLI does, on a blocking pool.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::routing::{any, get};
use axum::Router;
use canopy::{Datastore, Store, Subscription};

pub mod client;
mod error;
mod fields;
mod filter;
mod output;
mod patch;
mod precondition;
mod query;
mod remote;
mod restconf;
mod streams;
mod track;
mod uri;

pub use error::{ErrorEntry, RestError};
pub use track::{Stamp, Tracker};
pub use uri::{api_path, qualified_name, Resolver};

/// The media type of RESTCONF's JSON encoding.
pub const YANG_JSON: &str = "application/yang-data+json";
/// The media type of YANG Patch in JSON.
pub const YANG_PATCH_JSON: &str = "application/yang-patch+json";
/// The response header that carries the revision a write committed.
pub const REVISION_HEADER: &str = "canopy-revision";

/// How the server is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// The address to listen on; loopback unless TLS and users are configured.
    pub listen: SocketAddr,
    /// Largest request body accepted (bytes); larger ones get 413.
    pub max_body: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { listen: SocketAddr::from(([127, 0, 0, 1], 8040)), max_body: 256 << 20 }
    }
}

/// Why the server did not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error(transparent)]
    Store(#[from] canopy::Error),
    #[error("listening on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Config(String),
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

/// What every request handler shares.
pub struct App {
    pub store: Store,
    pub tracker: Arc<Tracker>,
    pub config: Config,
    /// Writes one at a time, so that a precondition checked holds at the commit.
    write_gate: Mutex<()>,
    /// Ends change streams when the server shuts down.
    shutdown: tokio::sync::watch::Sender<bool>,
    _feeds: Vec<Subscription>,
}

impl App {
    /// Shares `store` over HTTP: subscribes to every datastore (paths only)
    /// to keep `ETag`s and the change log.
    ///
    /// # Errors
    /// Backend errors reading the store's revision.
    pub fn new(store: Store, config: Config) -> Result<Arc<App>, ServeError> {
        let tracker = Arc::new(Tracker::new(store.revision()?));
        let mut feeds = Vec::new();
        for ds in Datastore::ALL {
            feeds.push(store.subscribe(ds, "/", i32::MIN, track::Feed(tracker.clone()))?);
        }
        Ok(Arc::new(App {
            store,
            tracker,
            config,
            write_gate: Mutex::new(()),
            shutdown: tokio::sync::watch::channel(false).0,
            _feeds: feeds,
        }))
    }

    /// The paths' resolver for the store as it is now.
    pub(crate) fn resolver(&self) -> Result<Resolver, RestError> {
        Ok(Resolver { yang: self.store.yang_schema()?, lists: self.store.known_lists()? })
    }
}

/// The HTTP routes over `app`.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/.well-known/host-meta", get(restconf::host_meta))
        .route("/restconf", any(restconf::api_root))
        .route("/restconf/", any(restconf::api_root))
        .route("/restconf/yang-library-version", any(restconf::yang_library_version))
        .route("/restconf/operations", any(restconf::operations))
        .route("/restconf/data", any(restconf::data))
        .route("/restconf/data/{*rest}", any(restconf::data))
        .route("/restconf/ds/{*rest}", any(restconf::data))
        .route("/restconf/streams/{ds}", get(streams::stream))
        .route("/canopy/ws", get(remote::upgrade))
        .fallback(restconf::no_resource)
        .with_state(app)
}

/// Serves `app` on `config.listen` until SIGTERM or Ctrl-C; `ready` gets the
/// bound address (port 0 picks a free port). In-flight requests finish before
/// it returns; change streams end.
///
/// # Errors
/// The address cannot be bound; serving fails.
pub async fn run(app: Arc<App>, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let addr = app.config.listen;
    if !addr.ip().is_loopback() {
        return Err(ServeError::Config(format!(
            "refusing to listen on {addr}: only a loopback address is served without TLS and authentication"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Listen { addr, source })?;
    let bound = listener.local_addr()?;
    ready(bound);
    let shutdown = app.shutdown.clone();
    let routes = router(app);
    axum::serve(listener, routes.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async move {
            stop_signal().await;
            shutdown.send_replace(true);
        })
        .await?;
    Ok(())
}

async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Opens nothing itself: runs [`run`] on a new multi-threaded runtime (for
/// the CLI).
///
/// # Errors
/// As [`run`]; the runtime cannot start.
pub fn serve_blocking(app: Arc<App>, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run(app, ready))
}
