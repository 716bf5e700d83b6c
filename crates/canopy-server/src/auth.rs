//! Authentication and access control, when the server has a users file: a
//! layer in front of every route that knows the request's user (HTTP Basic or
//! a bearer token) and refuses what that user may not do (RFC 8040's
//! `access-denied`: 401 without valid credentials, 403 without the access).
//! Without a users file the layer is not installed at all.
//!
//! A password is checked with argon2id, which costs tens of milliseconds by
//! design; a password found good is remembered for [`CACHE_TTL`], so that a
//! client sending many requests (keep-alive or not) pays it once. Wrong
//! passwords are never remembered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use argon2::password_hash::{PasswordHash, PasswordVerifier};
use argon2::Argon2;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use canopy::Datastore;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::RestError;
use crate::restconf::{Place, Target};
use crate::users::{self, Access, Mode, Secret, Users};

/// How long a verified password is taken without hashing it again.
pub const CACHE_TTL: Duration = Duration::from_secs(300);
/// How many verified (user, password) pairs are remembered at most.
pub const CACHE_ENTRIES: usize = 1024;

/// The challenge of every 401.
const CHALLENGE: &str = "Basic realm=\"canopy\", Bearer";

/// What a request needs, by method and path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Nothing: the discovery resources, which show no data.
    Open,
    /// A known user, whatever its access (resources that do not exist).
    Login,
    /// Read access to every one of these datastores.
    Read(&'static [Datastore]),
    /// Write access to this datastore.
    Write(Datastore),
}

const RUNNING_AND_OPERATIONAL: &[Datastore] = &[Datastore::Running, Datastore::Operational];

fn one(ds: Datastore) -> &'static [Datastore] {
    match ds {
        Datastore::Running => &[Datastore::Running],
        Datastore::Startup => &[Datastore::Startup],
        Datastore::Candidate => &[Datastore::Candidate],
        Datastore::Operational => &[Datastore::Operational],
    }
}

/// What `method` on `path` needs. It decides by the same parse the handlers
/// use ([`Target::parse`]), so that what is checked is what is served.
pub(crate) fn need(method: &Method, path: &str) -> Need {
    match path {
        "/.well-known/host-meta"
        | "/restconf"
        | "/restconf/"
        | "/restconf/yang-library-version"
        | "/restconf/operations" => return Need::Open,
        _ => {}
    }
    if let Some(name) = path.strip_prefix("/restconf/streams/") {
        return match crate::uri::datastore_named(name) {
            Some(ds) => Need::Read(one(ds)),
            None => Need::Login,
        };
    }
    let data = path == "/restconf/data" || path.starts_with("/restconf/data/") || path.starts_with("/restconf/ds/");
    if !data {
        return Need::Login;
    }
    let Ok(target) = Target::parse(path) else { return Need::Login };
    // OPTIONS tells only the methods; anything but these three may write.
    let reads = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    match (target.place, reads) {
        (Place::Data, true) => Need::Read(RUNNING_AND_OPERATIONAL),
        (Place::Data, false) => Need::Write(Datastore::Running),
        (Place::Ds(ds), true) => Need::Read(one(ds)),
        (Place::Ds(ds), false) => Need::Write(ds),
    }
}

/// The users of a server and what it remembers about them.
pub struct Auth {
    users: Arc<Users>,
    /// The tokens' hashes, with their entries' names.
    tokens: Vec<([u8; 32], String)>,
    /// Verified passwords: the keyed digest of (user, password) → when.
    cache: Mutex<HashMap<[u8; 32], Instant>>,
    /// A random key of this process mixed into the cache's digests, so that
    /// the memory of the server holds no plain SHA-256 of a password.
    cache_key: [u8; 32],
    /// At most this many argon2 hashes at once: a flood of wrong passwords
    /// takes these threads, not every blocking thread and their memory.
    hashing: tokio::sync::Semaphore,
    /// A hash that an unknown user's password is checked against, so that an
    /// unknown name costs what a wrong password costs (names do not leak by
    /// timing).
    decoy: OnceLock<String>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth").field("file", &self.users.file()).finish_non_exhaustive()
    }
}

/// Who a request is from.
struct Who<'a> {
    name: &'a str,
    access: Access,
}

/// Why a request is refused.
fn unauthorized(message: &str) -> Response {
    let mut r = RestError::new(StatusCode::UNAUTHORIZED, "protocol", "access-denied", message).into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(CHALLENGE));
    r
}

fn forbidden(message: String) -> Response {
    RestError::new(StatusCode::FORBIDDEN, "protocol", "access-denied", message).into_response()
}

impl Auth {
    pub fn new(users: Arc<Users>) -> Auth {
        let tokens = users
            .entries()
            .filter_map(|e| match e.secret {
                Secret::Token(h) => Some((h, e.name.clone())),
                Secret::Password(_) => None,
            })
            .collect();
        let mut cache_key = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut cache_key);
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        Auth {
            users,
            tokens,
            cache: Mutex::new(HashMap::new()),
            cache_key,
            hashing: tokio::sync::Semaphore::new(threads),
            decoy: OnceLock::new(),
        }
    }

    fn cache_digest(&self, user: &str, password: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.cache_key);
        h.update((user.len() as u64).to_le_bytes());
        h.update(user.as_bytes());
        h.update(password.as_bytes());
        h.finalize().into()
    }

    fn remembered(&self, digest: &[u8; 32]) -> bool {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.get(digest).is_some_and(|t| t.elapsed() < CACHE_TTL)
    }

    fn remember(&self, digest: [u8; 32]) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_ENTRIES && !cache.contains_key(&digest) {
            cache.retain(|_, t| t.elapsed() < CACHE_TTL);
            if cache.len() >= CACHE_ENTRIES {
                let oldest = cache.iter().min_by_key(|(_, t)| **t).map(|(k, _)| *k);
                if let Some(k) = oldest {
                    cache.remove(&k);
                }
            }
        }
        cache.insert(digest, Instant::now());
    }

    /// Who sent a request with these headers.
    async fn identify(self: &Arc<Self>, headers: &HeaderMap) -> Result<Who<'_>, Response> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized("authentication required (HTTP Basic or a bearer token)"));
        };
        let text = value.to_str().map_err(|_| unauthorized("the Authorization header is not text"))?;
        let (scheme, rest) = text.trim().split_once(' ').unwrap_or((text, ""));
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            return self.token(rest).ok_or_else(|| unauthorized("unknown bearer token"));
        }
        if !scheme.eq_ignore_ascii_case("basic") {
            return Err(unauthorized("unsupported authentication scheme (use Basic or Bearer)"));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| unauthorized("malformed Basic credentials"))?;
        let (user, password) =
            decoded.split_once(':').ok_or_else(|| unauthorized("malformed Basic credentials (no `:`)"))?;
        self.password(user, password).await.ok_or_else(|| unauthorized("wrong user name or password"))
    }

    fn token(&self, token: &str) -> Option<Who<'_>> {
        let hash = users::sha256(token.as_bytes());
        // Every entry is compared, each in constant time: neither which entry
        // matched nor how much of a hash did shows in the time taken.
        let mut found = None;
        for (h, name) in &self.tokens {
            if bool::from(h.ct_eq(&hash)) {
                found = Some(name);
            }
        }
        let entry = self.users.get(found?)?;
        Some(Who { name: &entry.name, access: entry.access })
    }

    async fn password(self: &Arc<Self>, user: &str, password: &str) -> Option<Who<'_>> {
        let entry = self.users.get(user).filter(|e| matches!(e.secret, Secret::Password(_)));
        let digest = self.cache_digest(user, password);
        if let Some(e) = entry {
            if self.remembered(&digest) {
                return Some(Who { name: &e.name, access: e.access });
            }
        }
        let phc = match entry.map(|e| &e.secret) {
            Some(Secret::Password(phc)) => Some(phc.clone()),
            _ => None,
        };
        let permit = self.hashing.acquire().await.ok()?;
        let me = self.clone();
        let password = password.to_string();
        let good = tokio::task::spawn_blocking(move || {
            let phc = phc.unwrap_or_else(|| me.decoy().to_string());
            // Parsed when the file was read; a failure here is a mismatch.
            PasswordHash::new(&phc).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
        })
        .await
        .unwrap_or(false);
        drop(permit);
        let e = entry.filter(|_| good)?;
        self.remember(digest);
        Some(Who { name: &e.name, access: e.access })
    }

    fn decoy(&self) -> &str {
        self.decoy.get_or_init(|| match users::user_entry("", "decoy", Access::default()) {
            Ok(users::Entry { secret: Secret::Password(phc), .. }) => phc,
            _ => String::new(),
        })
    }
}

/// Who a request let through is from, for handlers that decide more
/// themselves (`/canopy/ws` checks each registration): an extension of every
/// request when the server has users.
#[derive(Clone, Debug)]
pub(crate) struct Granted {
    pub name: String,
    pub access: Access,
}

impl Granted {
    /// Whether this user has `mode` on `ds`; the refusal names both.
    pub(crate) fn require(&self, ds: Datastore, mode: Mode, why: &str) -> Result<(), String> {
        if self.access.allows(ds, mode) {
            return Ok(());
        }
        let verb = if mode == Mode::Write { "write" } else { "read" };
        Err(format!("access denied: {} may not {verb} datastore {} ({why})", self.name, ds.name()))
    }
}

/// The layer: lets a request through when its user may do what it asks.
pub(crate) async fn check(State(auth): State<Arc<Auth>>, mut request: Request, next: Next) -> Response {
    let need = need(request.method(), request.uri().path());
    if need == Need::Open {
        return next.run(request).await;
    }
    let who = match auth.identify(request.headers()).await {
        Ok(who) => who,
        Err(refusal) => return refusal,
    };
    match need {
        Need::Read(all) => {
            if let Some(ds) = all.iter().find(|ds| !who.access.allows(**ds, Mode::Read)) {
                return forbidden(format!("{} may not read datastore {}", who.name, ds.name()));
            }
        }
        Need::Write(ds) if !who.access.allows(ds, Mode::Write) => {
            return forbidden(format!("{} may not write datastore {}", who.name, ds.name()));
        }
        _ => {}
    }
    let granted = Granted { name: who.name.to_string(), access: who.access };
    request.extensions_mut().insert(granted);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_requests_need() {
        use Datastore::*;
        let (get, put, options) = (Method::GET, Method::PUT, Method::OPTIONS);
        for open in ["/.well-known/host-meta", "/restconf", "/restconf/", "/restconf/operations"] {
            assert_eq!(need(&put, open), Need::Open, "{open}");
        }
        assert_eq!(need(&get, "/restconf/data"), Need::Read(&[Running, Operational]));
        assert_eq!(need(&get, "/restconf/data/m:a/b"), Need::Read(&[Running, Operational]));
        assert_eq!(need(&options, "/restconf/data"), Need::Read(&[Running, Operational]));
        for write in [Method::PUT, Method::POST, Method::PATCH, Method::DELETE, Method::TRACE] {
            assert_eq!(need(&write, "/restconf/data/m:a"), Need::Write(Running), "{write}");
            assert_eq!(need(&write, "/restconf/ds/ietf-datastores:startup/m:a"), Need::Write(Startup));
        }
        assert_eq!(need(&Method::HEAD, "/restconf/ds/ietf-datastores:candidate"), Need::Read(&[Candidate]));
        assert_eq!(need(&get, "/restconf/ds/ietf-datastores%3Aoperational/x"), Need::Read(&[Operational]));
        assert_eq!(need(&get, "/restconf/ds/ietf-datastores:nope"), Need::Login);
        assert_eq!(need(&get, "/restconf/streams/running"), Need::Read(&[Running]));
        assert_eq!(need(&get, "/restconf/streams/ietf-datastores%3Acandidate"), Need::Read(&[Candidate]));
        assert_eq!(need(&get, "/restconf/streams/nope"), Need::Login);
        assert_eq!(need(&get, "/restconf/datax"), Need::Login);
        assert_eq!(need(&get, "/anything"), Need::Login);
    }

    fn auth(text: &str) -> Arc<Auth> {
        Arc::new(Auth::new(Arc::new(Users::parse("users", text).unwrap())))
    }

    fn basic(user: &str, password: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        let v = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Basic {v}")).unwrap());
        h
    }

    #[tokio::test]
    async fn passwords_are_remembered_only_when_good() {
        let alice = users::user_entry("alice", "pw", "*=ro".parse().unwrap()).unwrap();
        let auth = auth(&format!("{alice}\n"));
        assert!(auth.identify(&basic("alice", "bad")).await.is_err());
        assert!(auth.cache.lock().unwrap().is_empty(), "a wrong password is not remembered");
        assert!(auth.identify(&basic("bob", "pw")).await.is_err());
        let who = auth.identify(&basic("alice", "pw")).await.ok().unwrap();
        assert_eq!(who.name, "alice");
        assert_eq!(auth.cache.lock().unwrap().len(), 1);
        // A remembered password is taken without hashing: far under argon2's cost.
        let t = Instant::now();
        for _ in 0..100 {
            assert!(auth.identify(&basic("alice", "pw")).await.is_ok());
        }
        assert!(t.elapsed() < Duration::from_millis(200), "{:?}", t.elapsed());
        // The cache does not make another password good.
        assert!(auth.identify(&basic("alice", "pw2")).await.is_err());
        assert!(auth.identify(&basic("alice", "")).await.is_err());
        assert_eq!(auth.cache.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn tokens_and_malformed_headers() {
        let (token, entry) = users::new_token("bot", "running=rw".parse().unwrap());
        let auth = auth(&format!("{entry}\n"));
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
        let who = auth.identify(&h).await.ok().unwrap();
        assert_eq!(who.name, "bot");
        assert!(who.access.allows(Datastore::Running, Mode::Write));
        assert!(!who.access.allows(Datastore::Startup, Mode::Read));
        for bad in ["Bearer x", "Bearer", "Basic", "Basic !!!", "Basic Ym90", "Digest abc", &format!("Bearer {token}0")]
        {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(bad).unwrap());
            let r = auth.identify(&h).await.err().unwrap();
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{bad}");
            assert_eq!(r.headers()[header::WWW_AUTHENTICATE], CHALLENGE);
        }
        // A token is not a password.
        assert!(auth.identify(&basic("bot", &token)).await.is_err());
    }

    #[test]
    fn the_cache_is_bounded() {
        let auth = auth("");
        for i in 0..CACHE_ENTRIES + 10 {
            auth.remember(auth.cache_digest(&format!("u{i}"), "p"));
        }
        assert_eq!(auth.cache.lock().unwrap().len(), CACHE_ENTRIES);
        assert!(auth.remembered(&auth.cache_digest(&format!("u{}", CACHE_ENTRIES + 9), "p")));
    }
}
