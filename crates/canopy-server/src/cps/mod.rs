//! ONAP CPS's REST API (`/cps/api`, cps-rest's OpenAPI v1, v2 and v3) over the
//! server's store: dataspaces, schema sets, anchors, data nodes, CPS path
//! queries and deltas. Each anchor is a canopy store of its own in a key range
//! of the server's backend (`registry`); CPS paths are planned through the
//! anchor's schema and evaluated on the subtree the plan reads (`path`).
//!
//! Errors are CPS's `ErrorMessage` (`{"status", "message", "details"}`) with
//! the statuses of its `CpsRestExceptionHandler`: a data node that does not
//! exist is 404 on GET and 400 otherwise, a missing dataspace, schema set or
//! anchor 400, something that exists already 409.

mod data;
mod delta;
mod edits;
mod files;
mod parallel;
pub mod path;
pub mod registry;
mod stream;
mod subscriptions;
mod xml;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};

use crate::App;

/// A CPS error reply.
#[derive(Debug)]
pub struct CpsError {
    pub status: StatusCode,
    pub message: String,
    pub details: String,
}

impl CpsError {
    pub fn bad(message: impl Into<String>, details: impl Into<String>) -> CpsError {
        CpsError { status: StatusCode::BAD_REQUEST, message: message.into(), details: details.into() }
    }

    pub fn exists(details: String) -> CpsError {
        CpsError { status: StatusCode::CONFLICT, message: "Already defined exception".into(), details }
    }

    pub fn in_use(message: String, details: String) -> CpsError {
        CpsError { status: StatusCode::CONFLICT, message, details }
    }

    pub fn internal(details: String) -> CpsError {
        CpsError { status: StatusCode::INTERNAL_SERVER_ERROR, message: "Internal Server Error".into(), details }
    }

    pub fn not_found(status: StatusCode, details: String) -> CpsError {
        CpsError { status, message: "DataNode not found".into(), details }
    }
}

impl CpsError {
    /// `404 NOT_FOUND`: the status as CPS's body gives it.
    fn status_text(&self) -> String {
        let reason = self.status.canonical_reason().unwrap_or("").to_ascii_uppercase().replace(' ', "_");
        format!("{} {reason}", self.status.as_u16())
    }

    /// The error with an XML body (CPS's `ErrorMessage` element), for a
    /// client that accepts XML only from an endpoint that answers in XML.
    fn into_xml_response(self) -> Response {
        let body = xml::error(&self, &self.status_text());
        (self.status, [(header::CONTENT_TYPE, "application/xml")], body).into_response()
    }
}

impl IntoResponse for CpsError {
    fn into_response(self) -> Response {
        let body = json!({
            "status": self.status_text(),
            "message": self.message,
            "details": self.details,
        });
        (self.status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
    }
}

/// What a handler answers.
pub enum Reply {
    Status(StatusCode),
    Text(StatusCode, String),
    Json(Json, Vec<(&'static str, String)>),
    /// An XML body (`xml`).
    Xml(String),
    /// A JSON body written while it is read (`crate::body`).
    Stream(axum::body::Body),
    /// Another reply with `Warning` headers (RFC 9110's 299 "miscellaneous
    /// persistent warning"), one per text.
    Warned(Box<Reply>, Vec<String>),
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self {
            Reply::Status(s) => s.into_response(),
            Reply::Text(s, t) => (s, [(header::CONTENT_TYPE, "text/plain")], t).into_response(),
            Reply::Xml(body) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/xml")], body).into_response(),
            Reply::Stream(body) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Reply::Warned(reply, warnings) => {
                let mut r = reply.into_response();
                for w in warnings {
                    // A quoted-string: no quotes, backslashes or controls inside.
                    let text: String =
                        w.chars().map(|c| if c == '"' || c == '\\' || c.is_control() { '\'' } else { c }).collect();
                    if let Ok(v) = format!("299 canopy \"{text}\"").parse() {
                        r.headers_mut().append(header::WARNING, v);
                    }
                }
                r
            }
            Reply::Json(v, extra) => {
                let mut r =
                    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response();
                for (k, v) in extra {
                    if let Ok(v) = v.parse() {
                        r.headers_mut().insert(k, v);
                    }
                }
                r
            }
        }
    }
}

/// One request, as the handlers see it.
pub struct Call {
    pub method: Method,
    pub segments: Vec<String>,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Call {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn required(&self, name: &str) -> Result<&str, CpsError> {
        self.param(name).ok_or_else(|| {
            CpsError::bad("Missing request parameter", format!("Required request parameter '{name}' is not present"))
        })
    }

    pub fn bool_param(&self, name: &str) -> Result<bool, CpsError> {
        match self.param(name) {
            None | Some("") | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(CpsError::bad("Invalid parameter", format!("{name} must be true or false, not `{v}`"))),
        }
    }

    pub fn content_type(&self) -> &str {
        self.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("application/json")
    }
}

fn decode(s: &str) -> String {
    let plus = s.replace('+', " ");
    percent_encoding::percent_decode_str(&plus).decode_utf8_lossy().into_owned()
}

/// The handler of everything under `/cps/api`.
pub async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, app.config.max_body).await {
        Ok(b) => b.to_vec(),
        Err(e) => return CpsError::bad("Request body too large or unreadable", e.to_string()).into_response(),
    };
    let path = parts.uri.path().strip_prefix("/cps/api").unwrap_or("");
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let query = parts
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| kv.split_once('=').map_or((decode(kv), String::new()), |(k, v)| (decode(k), decode(v))))
        .collect();
    let call = Call { method: parts.method, segments, query, headers: parts.headers, body };
    let xml_errors = answers_xml(&call) && accepts_xml_only(&call.headers);
    let cps = app.cps.clone();
    let done = move || {
        let big = call.body.len() >= RELEASE_AFTER;
        let reply = route(&cps, &call);
        match big {
            true => free_later(call, true),
            false => drop(call),
        }
        reply
    };
    match tokio::task::spawn_blocking(done).await {
        Ok(Ok(reply)) => reply.into_response(),
        Ok(Err(e)) if xml_errors => e.into_xml_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => CpsError::internal(format!("the request failed: {e}")).into_response(),
    }
}

/// Bodies of this size or more (a POST of many devices) leave the memory
/// their values took freed but resident: it is handed back to the system.
const RELEASE_AFTER: usize = 1 << 20;

/// Frees `garbage` after the reply is on its way, on a thread that frees
/// what big requests leave (a 1,000-device POST's body, edits and diff:
/// hundreds of MB in millions of allocations, a quarter of a second to free)
/// in the order it is handed over; with `trim`, the freed memory goes back
/// to the system ([`release_freed_memory`]) once no big request has left
/// garbage for [`TRIM_IDLE`] (see [`reap`]). At most two pieces wait: a
/// request handing over more waits for the thread, so bulk writes faster
/// than their freeing do not pile up memory.
pub(super) fn free_later<T: Send + 'static>(garbage: T, trim: bool) {
    static REAPER: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::SyncSender<Garbage>>> =
        std::sync::OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Garbage>(2);
        let spawned = std::thread::Builder::new()
            .name("cps-free".into())
            .spawn(move || reap(&rx, TRIM_IDLE, release_freed_memory));
        if let Err(e) = spawned {
            eprintln!("canopy serve: no thread to free big requests' memory on ({e}); they are freed in place");
        }
        std::sync::Mutex::new(tx)
    });
    let sent = reaper.lock().map(|tx| tx.send((Box::new(garbage), trim)));
    // No reaper (its thread could not start): the garbage came back and is
    // dropped here.
    if let Ok(Err(std::sync::mpsc::SendError((garbage, trim)))) = sent {
        drop(garbage);
        if trim {
            release_freed_memory();
        }
    }
}

type Garbage = (Box<dyn Send>, bool);

/// How long the freeing thread waits for more garbage before it hands the
/// freed memory back to the system.
const TRIM_IDLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Frees the garbage `rx` brings until its senders are gone, and calls
/// `trim` after garbage that asked for it once `idle` passes without more
/// (or the senders are gone). Back-to-back bulk writes (an import of many
/// POSTs) reuse the memory the one before freed instead of faulting it in
/// again from the system (10–15% of a 1,000-device POST); the memory goes
/// back once the writes stop.
fn reap(rx: &std::sync::mpsc::Receiver<Garbage>, idle: std::time::Duration, mut trim: impl FnMut()) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut due = false;
    loop {
        let next = if due {
            match rx.recv_timeout(idle) {
                Ok(g) => g,
                Err(RecvTimeoutError::Timeout) => {
                    trim();
                    due = false;
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(g) => g,
                Err(_) => break,
            }
        };
        let (garbage, asked) = next;
        drop(garbage);
        due |= asked;
    }
    if due {
        trim();
    }
}

/// Returns the heap's free memory to the system. glibc's allocator keeps
/// what a request of many small allocations freed (the JSON values, trees
/// and diffs of a 27 MB POST: several hundred MB) for later allocations of
/// this process instead.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it
    // takes no pointer and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Whether the endpoint of `call` answers in XML (its OpenAPI declares
/// `application/xml` replies): GET `node` v2 and v3, the v2 query on one
/// anchor, the deltas and applying one.
fn answers_xml(call: &Call) -> bool {
    let seg: Vec<&str> = call.segments.iter().map(String::as_str).collect();
    matches!(
        (call.method.as_str(), seg.as_slice()),
        ("GET", ["v2" | "v3", "dataspaces", _, "anchors", _, "node"])
            | ("GET", ["v2", "dataspaces", _, "anchors", _, "nodes", "query"])
            | ("GET" | "POST", ["v2", "dataspaces", _, "anchors", _, "delta"])
            | ("POST", ["v2", "dataspaces", _, "anchors", _, "applyChangesInDeltaReport"])
    )
}

/// An `Accept` that names XML and not JSON: errors are written in XML.
fn accepts_xml_only(headers: &HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    accept.contains("application/xml") && !accept.contains("application/json")
}

fn no_such(call: &Call) -> CpsError {
    CpsError {
        status: StatusCode::NOT_FOUND,
        message: "Resource Not Found".into(),
        details: format!("no CPS resource {} /{}", call.method, call.segments.join("/")),
    }
}

fn route(reg: &registry::Registry, call: &Call) -> Result<Reply, CpsError> {
    let seg: Vec<&str> = call.segments.iter().map(String::as_str).collect();
    let m = &call.method;
    let Some((version, rest)) = seg.split_first() else { return Err(no_such(call)) };
    let v = match *version {
        "v1" => 1,
        "v2" => 2,
        "v3" => 3,
        _ => return Err(no_such(call)),
    };
    match (m.as_str(), rest) {
        ("POST", ["dataspaces"]) => {
            let ds = call.required("dataspace-name")?;
            reg.create_dataspace(ds)?;
            Ok(created(v, ds))
        }
        ("DELETE", ["dataspaces"]) => {
            reg.delete_dataspace(call.required("dataspace-name")?)?;
            Ok(Reply::Status(StatusCode::NO_CONTENT))
        }
        ("GET", ["admin", "dataspaces"]) => {
            Ok(Reply::Json(reg.dataspaces()?.into_iter().map(|n| json!({"name": n})).collect(), vec![]))
        }
        ("GET", ["admin", "dataspaces", ds]) => {
            reg.dataspace_exists(ds)?;
            Ok(Reply::Json(json!({"name": ds}), vec![]))
        }
        ("POST", ["admin", "dataspaces", ds, "actions", "clean"]) => {
            reg.dataspace_exists(ds)?;
            Ok(Reply::Status(StatusCode::NO_CONTENT))
        }
        ("POST", ["dataspaces", ds, "schema-sets"]) => {
            let name = call.required("schema-set-name")?;
            // canopy's own parameter: `full` holds the set's anchors to every
            // constraint of the schema; CPS checks structure and types only.
            let validation = match call.param("validation") {
                None => canopy::Validation::Structure,
                Some(l) => {
                    l.parse().map_err(|e: canopy::Error| CpsError::bad("Invalid validation level", e.to_string()))?
                }
            };
            let (modules, relaxed) = data::upload_modules(call)?;
            reg.create_schema_set(ds, name, modules, validation)?;
            if relaxed.is_empty() {
                return Ok(created(v, name));
            }
            for r in &relaxed {
                eprintln!("canopy serve: schema set {ds}/{name}: {r}");
            }
            Ok(Reply::Warned(Box::new(created(v, name)), relaxed.iter().map(ToString::to_string).collect()))
        }
        ("GET", ["dataspaces", ds, "schema-sets"]) => {
            Ok(Reply::Json(reg.schema_sets(ds)?.iter().map(|s| set_details(ds, s)).collect(), vec![]))
        }
        ("GET", ["dataspaces", ds, "schema-sets", name]) => {
            Ok(Reply::Json(set_details(ds, &reg.schema_set(ds, name)?), vec![]))
        }
        ("DELETE", ["dataspaces", ds, "schema-sets", name]) => {
            reg.delete_schema_set(ds, name)?;
            Ok(Reply::Status(StatusCode::NO_CONTENT))
        }
        ("POST", ["dataspaces", ds, "anchors"]) => {
            let set = call.required("schema-set-name")?;
            let anchor = call.required("anchor-name")?;
            reg.create_anchor(ds, set, anchor)?;
            Ok(created(v, anchor))
        }
        ("GET", ["dataspaces", ds, "anchors"]) => {
            let wanted: Option<Vec<&str>> = call.param("schema-set-names").map(|s| s.split(',').collect());
            let list = reg
                .anchors(ds)?
                .into_iter()
                .filter(|(_, s)| wanted.as_ref().is_none_or(|w| w.contains(&s.as_str())))
                .map(|(a, s)| json!({"name": a, "dataspaceName": ds, "schemaSetName": s}))
                .collect();
            Ok(Reply::Json(list, vec![]))
        }
        ("GET", ["dataspaces", ds, "anchors", a]) => {
            let s = reg.anchor_set(ds, a)?;
            Ok(Reply::Json(json!({"name": a, "dataspaceName": ds, "schemaSetName": s}), vec![]))
        }
        ("DELETE", ["dataspaces", ds, "anchors", a]) => {
            reg.delete_anchor(ds, a)?;
            Ok(Reply::Status(StatusCode::NO_CONTENT))
        }
        ("GET", ["dataspaces", ds, "anchors", a, "node"]) if v > 1 && xml::wanted(call) => {
            as_xml(data::get_node_buffered(&*reg.anchor(ds, a)?, call, v)?)
        }
        ("GET", ["dataspaces", ds, "anchors", a, "node"]) => data::get_node(&reg.anchor(ds, a)?, call, v),
        (_, ["dataspaces", ds, "anchors", a, "nodes"]) => data::nodes(&*reg.anchor(ds, a)?, call, false),
        (_, ["dataspaces", ds, "anchors", a, "list-nodes"]) => data::nodes(&*reg.anchor(ds, a)?, call, true),
        ("GET", ["dataspaces", ds, "anchors", a, "nodes", "query"]) if v == 2 && xml::wanted(call) => {
            as_xml(data::query_buffered(&*reg.anchor(ds, a)?, call, v)?)
        }
        ("GET", ["dataspaces", ds, "anchors", a, "nodes", "query"]) => data::query(&reg.anchor(ds, a)?, call, v),
        ("POST", ["dataspaces", ds, "anchors", a, "nodes", "query"]) if v == 2 => {
            data::composite_query(&*reg.anchor(ds, a)?, call)
        }
        ("GET", ["dataspaces", ds, "nodes", "query"]) => data::query_dataspace(reg, ds, call),
        ("GET", ["dataspaces", ds, "anchors", a, "delta"]) => {
            let target = call.required("target-anchor-name")?;
            delta::between_anchors(&*reg.anchor(ds, a)?, &*reg.anchor(ds, target)?, call)
        }
        ("POST", ["dataspaces", ds, "anchors", a, "delta"]) => delta::with_document(&*reg.anchor(ds, a)?, call),
        ("POST", ["dataspaces", ds, "anchors", a, "applyChangesInDeltaReport"]) => {
            delta::apply(&*reg.anchor(ds, a)?, call)
        }
        (_, ["notification-subscription"]) if v == 2 => subscriptions::handle(reg, call),
        _ => Err(no_such(call)),
    }
}

/// A data reply in XML.
fn as_xml(reply: Reply) -> Result<Reply, CpsError> {
    match reply {
        Reply::Json(v, _) => Ok(Reply::Xml(xml::data_maps(&v))),
        _ => Err(CpsError::internal("an XML reply of something other than data maps".into())),
    }
}

fn created(version: u8, name: &str) -> Reply {
    match version {
        1 => Reply::Text(StatusCode::CREATED, name.to_string()),
        _ => Reply::Status(StatusCode::CREATED),
    }
}

fn set_details(ds: &str, s: &registry::SchemaSet) -> Json {
    json!({
        "dataspaceName": ds,
        "name": s.name,
        "moduleReferences": s.modules.iter().map(|m| json!({
            "name": m.name, "namespace": m.namespace, "revision": m.revision,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Garbage that says when it is freed.
    struct Tracked(Arc<AtomicUsize>);
    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Garbage is freed as it comes; the memory goes back once, after the
    /// last piece that asked for it, not after each (here: when the
    /// senders are gone, well before the long wait ends); nothing asked,
    /// nothing trimmed.
    #[test]
    fn freed_memory_goes_back_once_the_garbage_stops() {
        for asked in [[true, false, true], [false, false, false]] {
            let (freed, trims) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let (tx, rx) = std::sync::mpsc::sync_channel::<Garbage>(2);
            let t = trims.clone();
            let reaper = std::thread::spawn(move || {
                reap(&rx, Duration::from_secs(600), || {
                    t.fetch_add(1, Ordering::SeqCst);
                })
            });
            for trim in asked {
                tx.send((Box::new(Tracked(freed.clone())), trim)).unwrap();
            }
            // The channel holds two: after a third send the first is freed.
            tx.send((Box::new(()), false)).unwrap();
            tx.send((Box::new(()), false)).unwrap();
            assert!(freed.load(Ordering::SeqCst) >= 2);
            assert_eq!(trims.load(Ordering::SeqCst), 0, "trimmed while garbage still came");
            drop(tx);
            reaper.join().unwrap();
            assert_eq!(freed.load(Ordering::SeqCst), 3);
            assert_eq!(trims.load(Ordering::SeqCst), usize::from(asked.contains(&true)));
        }
    }

    /// With no more garbage, the memory goes back after the wait.
    #[test]
    fn freed_memory_goes_back_after_the_wait() {
        let trims = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::sync_channel::<Garbage>(2);
        let t = trims.clone();
        let reaper = std::thread::spawn(move || {
            reap(&rx, Duration::from_millis(20), || {
                t.fetch_add(1, Ordering::SeqCst);
            })
        });
        tx.send((Box::new(()), true)).unwrap();
        let waited = std::time::Instant::now();
        while trims.load(Ordering::SeqCst) == 0 && waited.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(trims.load(Ordering::SeqCst), 1, "no trim after the wait");
        drop(tx);
        reaper.join().unwrap();
        assert_eq!(trims.load(Ordering::SeqCst), 1, "trimmed again with nothing asked");
    }
}
