//! `canopy serve`: a canopy store over HTTP.
//!
//! RESTCONF (RFC 8040) on `/restconf`, the NMDA datastores (RFC 8527) on
//! `/restconf/ds/…`, YANG Patch (RFC 8072), change streams as Server-Sent
//! Events on `/restconf/streams/…`. Every resource has an `ETag` and a
//! `Last-Modified` that change when it or anything below it changes, and only
//! then; writes honour `If-Match` and `If-Unmodified-Since`, and answer with
//! the commit's revision (`Canopy-Revision`).
//!
//! With a users file ([`Config::users`]) every request but discovery needs
//! credentials (HTTP Basic or a bearer token) and each user reads or writes
//! only the datastores its entry allows; with [`Config::tls`] it speaks HTTPS.
//! It listens on a loopback address only, unless it has both.
//!
//! The server adds transport, not logic: it calls the same [`canopy::Session`]
//! API the CLI does, on a blocking pool.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::routing::{any, get};
use axum::Router;
use canopy::{Datastore, Store, Subscription};

mod auth;
mod body;
pub mod client;
mod conn;
pub mod cps;
mod encoding;
mod error;
mod fields;
mod filter;
mod library;
mod monitoring;
mod output;
mod patch;
mod precondition;
mod query;
mod remote;
mod restconf;
mod streams;
mod target;
mod tls;
mod track;
mod uri;
mod users;
mod xml_meta;
mod xml_stream;

pub use auth::{CACHE_ENTRIES, CACHE_TTL};
pub use error::{ErrorEntry, RestError};
pub use tls::config as tls_config;
pub use track::{Stamp, Tracker};
pub use uri::{api_path, qualified_name, Resolver};
pub use users::{new_token, user_entry, valid_name, Access, Entry, Mode, Secret, Users, UsersError};

/// The media type of RESTCONF's JSON encoding.
pub const YANG_JSON: &str = "application/yang-data+json";
/// The media type of RESTCONF's XML encoding.
pub const YANG_XML: &str = "application/yang-data+xml";
/// The media type of YANG Patch in JSON.
pub const YANG_PATCH_JSON: &str = "application/yang-patch+json";
/// The media type of YANG Patch in XML.
pub const YANG_PATCH_XML: &str = "application/yang-patch+xml";
/// The response header that carries the revision a write committed.
pub const REVISION_HEADER: &str = "canopy-revision";

/// How the server is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// The address to listen on; loopback unless TLS and users are configured.
    pub listen: SocketAddr,
    /// Largest request body accepted (bytes); larger ones get 413.
    pub max_body: usize,
    /// Who may do what; `None`: no authentication, everyone may do anything.
    pub users: Option<Arc<Users>>,
    /// HTTPS with this setup (see [`tls_config`]); `None`: plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// How long a client may take to send a request head, from the moment
    /// the server waits for it; past it the connection is closed. Bodies,
    /// replies and change streams have no such deadline.
    pub header_timeout: std::time::Duration,
}

/// The default of [`Config::header_timeout`].
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8040)),
            max_body: 256 << 20,
            users: None,
            tls: None,
            header_timeout: HEADER_TIMEOUT,
        }
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
    #[error(transparent)]
    Users(#[from] UsersError),
    #[error("{0}")]
    Tls(String),
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

/// The address of a request's client, as handlers see it (plain TCP or TLS).
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub SocketAddr);

/// What every request handler shares.
pub struct App {
    pub store: Store,
    /// The CPS REST API's dataspaces, schema sets and anchors, on the same backend.
    pub cps: Arc<cps::registry::Registry>,
    pub tracker: Arc<Tracker>,
    pub config: Config,
    /// Checks every request when there is a users file.
    auth: Option<Arc<auth::Auth>>,
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
        let auth = config.users.as_ref().map(|u| Arc::new(auth::Auth::new(u.clone())));
        let cps = Arc::new(cps::registry::Registry::new(store.shared_backend(), store.url()));
        Ok(Arc::new(App {
            cps,
            store,
            auth,
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

/// What the router makes of a request line before it touches the store: the
/// datastore resource and the canopy path of `uri` (path and query, still
/// percent-encoded), its query parameters checked for `method`. The fuzz
/// target of the router drives this.
///
/// # Errors
/// The reply a bad URI gets: an unknown datastore, a malformed api-path or
/// query parameter.
pub fn parse_request(uri: &str, method: &str, resolver: &Resolver) -> Result<canopy::Path, RestError> {
    let (path, query) = uri.split_once('?').map_or((uri, None), |(p, q)| (p, Some(q)));
    let target = restconf::Target::parse(path)?;
    let using = match method {
        "GET" | "HEAD" => query::Use::Read,
        "POST" => query::Use::Create,
        "PUT" => query::Use::Replace,
        _ => query::Use::Other,
    };
    query::Params::parse(query, using)?;
    resolver.to_path(&target.rest)
}

/// The HTTP routes over `app`, behind the authentication layer when `app`
/// has users (without, there is no layer to pay for).
pub fn router(app: Arc<App>) -> Router {
    let auth = app.auth.clone();
    let routes = Router::new()
        .route("/.well-known/host-meta", get(restconf::host_meta))
        .route("/restconf", any(restconf::api_root))
        .route("/restconf/", any(restconf::api_root))
        .route("/restconf/yang-library-version", any(restconf::yang_library_version))
        .route("/restconf/operations", any(restconf::operations))
        .route("/restconf/data", any(restconf::data))
        .route("/restconf/data/{*rest}", any(restconf::data))
        .route("/restconf/ds/{*rest}", any(restconf::data))
        .route("/restconf/streams/{ds}", get(streams::stream))
        .route("/restconf/yang/{file}", any(library::module))
        .route("/canopy/ws", get(remote::upgrade))
        .route("/cps/api/{*rest}", any(cps::handle))
        .fallback(restconf::no_resource)
        .with_state(app)
        .layer(axum::middleware::from_fn(encoding::errors_as_requested));
    match auth {
        Some(auth) => routes.layer(axum::middleware::from_fn_with_state(auth, auth::check)),
        None => routes,
    }
}

/// Serves `app` on `config.listen` until SIGTERM or Ctrl-C; `ready` gets the
/// bound address (port 0 picks a free port). In-flight requests finish before
/// it returns; change streams end.
///
/// # Errors
/// The address cannot be bound; serving fails.
pub async fn run(app: Arc<App>, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let addr = app.config.listen;
    if !addr.ip().is_loopback() && (app.config.tls.is_none() || app.config.users.is_none()) {
        return Err(ServeError::Config(format!(
            "refusing to listen on {addr}: an address other than loopback needs both TLS (--tls-cert, --tls-key) and authentication (--users)"
        )));
    }
    let listener = listen(addr).map_err(|source| ServeError::Listen { addr, source })?;
    let bound = listener.local_addr()?;
    let shutdown = app.shutdown.clone();
    let signal = stop_signal()?;
    let stopped = async move {
        signal.await;
        shutdown.send_replace(true);
    };
    let (tls, header_timeout) = (app.config.tls.clone(), app.config.header_timeout);
    let routes = router(app);
    match tls {
        None => {
            ready(bound);
            conn::serve(listener, routes, header_timeout, stopped).await;
        }
        Some(tls) => {
            let listener = tls::TlsListener::new(listener, tls)?;
            ready(bound);
            conn::serve(listener, routes, header_timeout, stopped).await;
        }
    }
    Ok(())
}

/// Binds `addr` with a deep accept queue: a thousand clients connecting at
/// once must not find it full (tokio's default holds 1024).
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C). The handlers are installed here,
/// before the server says it listens: a signal that comes right after that
/// line stops the server gracefully instead of killing it.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (mut term, mut int) = (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
        Ok(async move {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
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
