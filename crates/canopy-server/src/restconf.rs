//! RESTCONF resources: the API root, `/restconf/data` and the NMDA datastores
//! `/restconf/ds/ietf-datastores:NAME` (RFC 8527), with every method.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use canopy::{Datastore, Edit, Insert, Operation, ReadOptions, Session, WithDefaults};
use canopy_core::path::{canonical_name, Path, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::{Container, NodeRef};
use percent_encoding::percent_decode_str;

use crate::encoding::{self, Enc};
use crate::error::RestError;
use crate::filter::{self, Keep};
use crate::precondition::{self, Outcome};
use crate::query::{Content, InsertAt, Params, Use};
use crate::track::Stamp;
use crate::uri::{api_path, Resolver};
use crate::{output, patch, App, REVISION_HEADER, YANG_JSON, YANG_PATCH_JSON, YANG_PATCH_XML, YANG_XML};

/// The `yang-library-version` this server reports (RFC 8525's revision).
const YANG_LIBRARY_VERSION: &str = "2019-01-04";

const ALLOW_DATA: &str = "GET, HEAD, OPTIONS, PUT, POST, PATCH, DELETE";
const ALLOW_READ: &str = "GET, HEAD, OPTIONS";

/// Which datastore resource a request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `/restconf/data`: reads see configuration and state, writes go to running.
    Data,
    /// `/restconf/ds/ietf-datastores:NAME`.
    Ds(Datastore),
}

/// A data resource: the datastore resource and the api-path below it (still
/// percent-encoded).
#[derive(Clone, Debug)]
pub struct Target {
    pub place: Place,
    pub rest: String,
}

impl Target {
    /// # Errors
    /// 404 for a datastore this server does not have.
    pub fn parse(uri_path: &str) -> Result<Target, RestError> {
        if let Some(rest) = uri_path.strip_prefix("/restconf/data") {
            return Ok(Target { place: Place::Data, rest: rest.to_string() });
        }
        let after = uri_path.strip_prefix("/restconf/ds/").unwrap_or_default();
        let (name, rest) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let Some(ds) = crate::uri::datastore_named(name).filter(|_| !name.is_empty()) else {
            let other = percent_decode_str(name).decode_utf8_lossy();
            return Err(RestError::new(
                StatusCode::NOT_FOUND,
                "protocol",
                "invalid-value",
                format!(
                    "no datastore `{other}` (there are ietf-datastores:running, candidate, startup and operational)"
                ),
            ));
        };
        Ok(Target { place: Place::Ds(ds), rest: rest.to_string() })
    }

    /// The URI of the resource at `path` in this datastore resource.
    pub fn uri_of(&self, path: &Path) -> String {
        let base = match self.place {
            Place::Data => "/restconf/data".to_string(),
            Place::Ds(ds) => format!("/restconf/ds/ietf-datastores:{}", ds.name()),
        };
        base + &api_path(path)
    }

    /// The datastores whose changes change what a read of this resource shows.
    fn read_stamps(&self) -> &'static [Datastore] {
        match self.place {
            Place::Data => stamps_of(Datastore::Operational),
            Place::Ds(ds) => stamps_of(ds),
        }
    }
}

/// The datastores whose changes change what `ds` shows: operational shows
/// running's configuration, the candidate running's until it is edited.
pub(crate) fn stamps_of(ds: Datastore) -> &'static [Datastore] {
    match ds {
        Datastore::Operational => &[Datastore::Running, Datastore::Operational],
        Datastore::Candidate => &[Datastore::Candidate, Datastore::Running],
        Datastore::Running => &[Datastore::Running],
        Datastore::Startup => &[Datastore::Startup],
    }
}

/// Runs engine work on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    app: Arc<App>,
    f: impl FnOnce(&App) -> Result<T, RestError> + Send + 'static,
) -> Result<T, RestError> {
    match tokio::task::spawn_blocking(move || f(&app)).await {
        Ok(r) => r,
        Err(e) => Err(RestError::internal(format!("the request failed inside the server: {e}"))),
    }
}

pub async fn host_meta() -> Response {
    let body =
        "<XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>\n  <Link rel='restconf' href='/restconf'/>\n</XRD>\n";
    ([(header::CONTENT_TYPE, "application/xrd+xml")], body).into_response()
}

fn read_only(method: &Method, headers: &HeaderMap, doc: impl FnOnce() -> serde_json::Value) -> Response {
    let enc = match encoding::negotiate(headers) {
        Ok(e) => e,
        Err(e) => return e.into_response(),
    };
    match *method {
        Method::GET => encoding::protocol_reply(StatusCode::OK, &doc(), enc),
        Method::HEAD => (StatusCode::OK, [(header::CONTENT_TYPE, enc.media())]).into_response(),
        Method::OPTIONS => (StatusCode::OK, [(header::ALLOW, ALLOW_READ)]).into_response(),
        _ => RestError::method_not_allowed(method.as_str(), ALLOW_READ).into_response(),
    }
}

pub async fn api_root(method: Method, headers: HeaderMap) -> Response {
    read_only(&method, &headers, || {
        serde_json::json!({
            "ietf-restconf:restconf": {
                "data": {},
                "operations": {},
                "yang-library-version": YANG_LIBRARY_VERSION
            }
        })
    })
}

pub async fn yang_library_version(method: Method, headers: HeaderMap) -> Response {
    read_only(&method, &headers, || serde_json::json!({ "ietf-restconf:yang-library-version": YANG_LIBRARY_VERSION }))
}

pub async fn operations(method: Method, headers: HeaderMap) -> Response {
    read_only(&method, &headers, || serde_json::json!({ "ietf-restconf:operations": {} }))
}

pub async fn no_resource(uri: Uri) -> Response {
    RestError::new(StatusCode::NOT_FOUND, "protocol", "invalid-value", format!("no resource {}", uri.path()))
        .into_response()
}

/// Every method on a data resource.
pub async fn data(State(app): State<Arc<App>>, method: Method, uri: Uri, headers: HeaderMap, body: Body) -> Response {
    let target = match Target::parse(uri.path()) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let query = uri.query().map(str::to_string);
    let result = match method {
        Method::GET | Method::HEAD => match encoding::negotiate(&headers) {
            Ok(enc) => {
                let head = method == Method::HEAD;
                let shared = app.clone();
                blocking(app, move |app| read(app, &shared, &target, query.as_deref(), &headers, head, enc)).await
            }
            Err(e) => Err(e),
        },
        Method::OPTIONS => Ok(options(&target)),
        Method::PUT | Method::POST | Method::PATCH | Method::DELETE => {
            match axum::body::to_bytes(body, app.config.max_body).await {
                Ok(bytes) => {
                    blocking(app, move |app| write(app, &target, &method, query.as_deref(), &headers, &bytes)).await
                }
                Err(e) => Err(body_error(&e, app.config.max_body)),
            }
        }
        _ => Err(RestError::method_not_allowed(method.as_str(), allowed(&target))),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

fn body_error(e: &axum::Error, max: usize) -> RestError {
    // The body reader's limit error says so in its message, at some depth.
    let mut too_big = false;
    let mut cur: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = cur {
        too_big |= err.to_string().contains("length limit");
        cur = err.source();
    }
    if too_big {
        return RestError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "transport",
            "too-big",
            format!("the request body is larger than the server takes ({max} bytes)"),
        );
    }
    RestError::new(StatusCode::BAD_REQUEST, "transport", "malformed-message", format!("reading the request body: {e}"))
}

fn allowed(target: &Target) -> &'static str {
    match target.place {
        Place::Ds(Datastore::Operational) => ALLOW_READ,
        _ => ALLOW_DATA,
    }
}

fn options(target: &Target) -> Response {
    let mut r = StatusCode::OK.into_response();
    r.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allowed(target)));
    if allowed(target) == ALLOW_DATA {
        r.headers_mut().insert(
            header::HeaderName::from_static("accept-patch"),
            HeaderValue::from_static(
                "application/yang-data+json, application/yang-data+xml, application/yang-patch+json, application/yang-patch+xml",
            ),
        );
    }
    r
}

fn stamp_headers(r: &mut Response, stamp: Stamp) {
    if let Ok(v) = HeaderValue::from_str(&stamp.etag()) {
        r.headers_mut().insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(stamp.time)) {
        r.headers_mut().insert(header::LAST_MODIFIED, v);
    }
}

/// GET and HEAD.
#[allow(clippy::too_many_arguments)]
fn read(
    app: &App,
    shared: &Arc<App>,
    target: &Target,
    query: Option<&str>,
    headers: &HeaderMap,
    head: bool,
    enc: Enc,
) -> Result<Response, RestError> {
    let params = Params::parse(query, Use::Read)?;
    let library = matches!(target.place, Place::Data | Place::Ds(Datastore::Operational))
        && target.rest.trim_end_matches('/') == format!("/{}", crate::library::NODE);
    if library {
        let doc = crate::library::document(&app.store.schema_modules()?);
        let mut r = encoding::protocol_reply(StatusCode::OK, &doc, enc);
        if head {
            *r.body_mut() = Body::empty();
        }
        return Ok(r);
    }
    let monitoring = matches!(target.place, Place::Data | Place::Ds(Datastore::Operational))
        .then(|| target.rest.strip_prefix(&format!("/{}", crate::monitoring::NODE)))
        .flatten()
        .filter(|rest| rest.is_empty() || rest.starts_with('/'));
    if let Some(rest) = monitoring {
        if params.with_origin || params.filter.is_some() || params.fields.is_some() || params.depth.is_some() {
            return Err(RestError::invalid(
                "ietf-restconf-monitoring takes none of the query parameters with-origin, filter, fields and depth",
            ));
        }
        let doc = crate::monitoring::document(headers, app.config.tls.is_some());
        let Some(part) = crate::monitoring::select(&doc, rest)? else {
            return Err(RestError::not_found(&format!("/{}{rest}", crate::monitoring::NODE)));
        };
        let mut r = encoding::protocol_reply(StatusCode::OK, &part, enc);
        if head {
            *r.body_mut() = Body::empty();
        }
        return Ok(r);
    }
    let resolver = app.resolver()?;
    if enc == Enc::Xml {
        encoding::schema_for_xml(resolver.yang.as_ref(), true)?;
    }
    let path = resolver.to_path(&target.rest)?;
    if params.with_origin && target.place != Place::Ds(Datastore::Operational) {
        return Err(RestError::invalid("query parameter `with-origin` applies only to the operational datastore"));
    }
    let ds = match target.place {
        Place::Data if params.content == Content::Config => Datastore::Running,
        Place::Data => Datastore::Operational,
        Place::Ds(ds) => ds,
    };
    // The stamp is taken before the data: a commit in between makes the tag
    // older than the data (a needless 412 later), never newer.
    app.tracker.sync(app.store.revision()?);
    let stamp = app.tracker.stamp(target.read_stamps(), &path);
    if precondition::evaluate(headers, stamp, true, true)? == Outcome::NotModified {
        let mut r = StatusCode::NOT_MODIFIED.into_response();
        stamp_headers(&mut r, stamp);
        return Ok(r);
    }
    let depth = params.depth.map(|d| if path.is_root() { d } else { d - 1 });
    let opts = ReadOptions { depth, with_defaults: params.with_defaults.unwrap_or_default() };
    let session = app.store.session(ds);
    // A plain read of a stored datastore is written while it is read.
    let plain = !head
        && params.filter.is_none()
        && params.fields.is_none()
        && params.depth.is_none()
        && params.with_defaults.is_none_or(|w| w == WithDefaults::Explicit)
        && !params.tagged
        && !params.with_origin
        && params.content == Content::All
        && ds != Datastore::Operational;
    if plain && path.segments.iter().all(|s| matches!(s.selector, Selector::None | Selector::Keys(_))) {
        // Decided here, before the reply starts: the target is stored (a
        // container or entry; a whole list is read the buffered way).
        let stored = path.is_root() || session.pin()?.stored_node(&path.to_string())?.is_some();
        if stored {
            let (app, path) = (shared.clone(), path.clone());
            let xml = match (enc, &resolver.yang) {
                (Enc::Xml, Some(y)) => Some(y.clone()),
                _ => None,
            };
            let body = crate::body::streamed(move |w| {
                let read = |out: &mut dyn std::io::Write| {
                    let mut t = crate::target::TargetOnly::new(out, &path);
                    app.store
                        .session(ds)
                        .get_json(&path.to_string(), ReadOptions::default(), true, &mut t)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                    t.finish().map(drop)
                };
                match xml {
                    None => read(w),
                    Some(yang) => {
                        let mut x = crate::xml_stream::XmlStream::new(w, &yang, &path);
                        read(&mut x)?;
                        x.finish().map(drop)
                    }
                }
            });
            let mut r = (StatusCode::OK, [(header::CONTENT_TYPE, enc.media())], body).into_response();
            stamp_headers(&mut r, stamp);
            return Ok(r);
        }
    }
    let query_text = params.filter.clone().unwrap_or_else(|| path.to_string());
    let mut tree = session.get(&query_text, opts)?;
    if let (true, Some(y)) = (params.tagged, &resolver.yang) {
        y.tag_defaults(&mut tree, &path);
    }
    if params.content != Content::All {
        let keep = if params.content == Content::Config { Keep::Config } else { Keep::State };
        match (&resolver.yang, ds) {
            (Some(y), _) => filter::by_schema(&mut tree, y.model(), None, keep),
            (None, Datastore::Operational) => filter::by_origin(&mut tree, None, keep, &[]),
            (None, _) if keep == Keep::State => tree = Container::default(),
            (None, _) => {}
        }
    }
    if ds == Datastore::Operational && !params.with_origin {
        filter::strip_origin(&mut tree);
    }
    // The whole operational datastore holds the server's YANG library (RFC
    // 8525, RFC 8527 section 2) and its restconf-state (RFC 8040 section
    // 9), state that no module of the store describes.
    let library =
        path.is_root() && ds == Datastore::Operational && params.filter.is_none() && params.content != Content::Config;
    if library {
        for mut own in [
            crate::library::tree(&app.store.schema_modules()?)?,
            crate::monitoring::tree(headers, app.config.tls.is_some())?,
        ] {
            if let Some(d) = depth {
                canopy::trim_depth(&mut own, d);
            }
            for (name, node) in own.children {
                tree.children.insert(name, node);
            }
        }
    }
    if let (Some(fields), Some(y)) = (&params.fields, &resolver.yang) {
        let model = y.model();
        let at = model.by_path.get(&path.schema_path()).copied();
        if at.is_some() || path.is_root() {
            // The library's node is not in the store's schema: checked by
            // what it holds, not by the model.
            let checked = crate::fields::Fields {
                children: fields
                    .children
                    .iter()
                    .filter(|(n, _)| !(library && (n == crate::library::NODE || n == crate::monitoring::NODE)))
                    .cloned()
                    .collect(),
            };
            checked
                .check(model, at, path.module())
                .map_err(|e| RestError::invalid(format!("query parameter `fields`: {e}")))?;
        }
    }
    if params.with_origin && !path.is_root() {
        // The target carries its effective origin: its ancestors are not shown.
        let mut origin = None;
        for n in 1..=path.segments.len() {
            let prefix = Path { segments: path.segments[..n].to_vec() };
            if let Some(c) = tree.lookup(&prefix).and_then(|r| r.container()) {
                origin = c.meta.get(canopy::ORIGIN).map(str::to_owned).or(origin);
            }
        }
        if let (Some(o), Ok(c)) = (origin, canopy_core::diff::container_mut(&mut tree, &path)) {
            c.meta.insert_if_absent(canopy::ORIGIN, || o.into());
        }
    }
    if let Some(fields) = &params.fields {
        let inner = matches!(tree.lookup(&path), Some(n) if n.container().is_none());
        if inner {
            return Err(RestError::invalid("query parameter `fields` applies to a container or list entry"));
        }
        if let Ok(c) = canopy_core::diff::container_mut(&mut tree, &path) {
            fields.apply(c, path.module());
        }
    }
    let node = match path.is_root() {
        true => NodeRef::Root(&tree),
        false => tree.lookup(&path).ok_or_else(|| RestError::not_found(&path.to_string()))?,
    };
    let mut body = Vec::new();
    if !head {
        output::write_target(&mut body, &path, node, true)
            .map_err(|e| RestError::internal(format!("writing the reply: {e}")))?;
        if let (Enc::Xml, Some(y)) = (enc, &resolver.yang) {
            body = encoding::data_reply_xml(y, &path, &body)?.into_bytes();
        }
    }
    let mut r = (StatusCode::OK, [(header::CONTENT_TYPE, enc.media())], body).into_response();
    stamp_headers(&mut r, stamp);
    Ok(r)
}

/// Counts this server's writes under way while alive (see [`crate::Tracker::writing`]).
struct Writing<'a>(&'a App);

impl<'a> Writing<'a> {
    fn start(app: &'a App) -> Writing<'a> {
        app.tracker.writing.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Writing(app)
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.tracker.writing.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The media type of a request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Media {
    Json,
    Xml,
    YangPatch,
    YangPatchXml,
}

fn media(headers: &HeaderMap) -> Result<Media, RestError> {
    let Some(v) = headers.get(header::CONTENT_TYPE) else { return Ok(Media::Json) };
    let t = v.to_str().unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match t.as_str() {
        "application/yang-data+json" | "application/json" | "" => Ok(Media::Json),
        "application/yang-data+xml" | "application/xml" => Ok(Media::Xml),
        "application/yang-patch+json" => Ok(Media::YangPatch),
        "application/yang-patch+xml" => Ok(Media::YangPatchXml),
        other => Err(RestError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "protocol",
            "invalid-value",
            format!(
                "media type `{other}` is not supported here (use {YANG_JSON} or {YANG_XML}; with PATCH, also {YANG_PATCH_JSON} or {YANG_PATCH_XML})"
            ),
        )),
    }
}

/// Whether the node at `path` exists in the session's datastore.
pub(crate) fn exists(session: &Session<'_>, path: &Path) -> Result<bool, RestError> {
    if path.is_root() {
        return Ok(true);
    }
    Ok(session.get_item(&path.to_string())?.is_some())
}

/// PUT, POST, PATCH and DELETE.
fn write(
    app: &App,
    target: &Target,
    method: &Method,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, RestError> {
    let ds = match target.place {
        Place::Data => Datastore::Running,
        Place::Ds(Datastore::Operational) => {
            return Err(RestError::method_not_allowed(method.as_str(), ALLOW_READ));
        }
        Place::Ds(ds) => ds,
    };
    let using = match *method {
        Method::POST => Use::Create,
        Method::PUT => Use::Replace,
        _ => Use::Other,
    };
    let params = Params::parse(query, using)?;
    let media = if *method == Method::DELETE { Media::Json } else { media(headers)? };
    let yang_patch = matches!(media, Media::YangPatch | Media::YangPatchXml);
    if yang_patch && *method != Method::PATCH {
        return Err(RestError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "protocol",
            "invalid-value",
            format!("{YANG_PATCH_JSON} and {YANG_PATCH_XML} are taken by PATCH only"),
        ));
    }
    // The reply of a YANG Patch has a body: its encoding must be acceptable.
    let enc = if yang_patch { encoding::negotiate(headers)? } else { Enc::Json };
    let text =
        std::str::from_utf8(body).map_err(|e| RestError::malformed(format!("the request body is not UTF-8: {e}")))?;
    let resolver = app.resolver()?;
    let path = resolver.to_path(&target.rest)?;
    let converted;
    let text = match media {
        Media::Xml if !text.trim().is_empty() => {
            let yang = encoding::schema_for_xml(resolver.yang.as_ref(), false)?;
            let parent = match *method {
                Method::POST => path.clone(),
                _ => path.parent().unwrap_or_default(),
            };
            converted = encoding::body_to_json(yang, &parent, path.is_root(), text)?;
            converted.as_str()
        }
        Media::YangPatchXml => {
            let yang = encoding::schema_for_xml(resolver.yang.as_ref(), false)?;
            converted = patch::xml_to_json(yang, &resolver, target, text)?;
            converted.as_str()
        }
        _ => text,
    };
    let stamps = stamps_of(ds);
    let session = app.store.session(ds);

    committed_at_sync(app, headers, |at| {
        if precondition::any(headers) {
            let exists = exists(&session, &path)?;
            precondition::evaluate(headers, app.tracker.stamp(stamps, &path), exists, false)?;
        }
        if yang_patch {
            return patch::run(app, &session, &resolver, target, &path, text, enc, at);
        }
        write_edit(app, &session, &resolver, target, method, &params, &path, text, media, at)
    })
}

/// How many times a write is tried at a revision when other writers keep
/// committing between the revision it read and its commit.
const MOVED_RETRIES: usize = 12;

/// Runs `write` under the write gate at the store's revision, read and
/// accounted for by the tracker first: `write` checks the request's
/// preconditions (`If-Match` and the others) there and commits only at that
/// revision (`Some`). When another writer, in this process or another,
/// commits in between, the gate is let go for a random pause, and the
/// revision is read and the request checked again on the new state: a
/// precondition that held is never applied to a state it was not checked
/// on, and no other process's commit lands unaccounted for between the
/// tracker's revision and this write's (its changes would keep their old
/// `ETag`s). A request with preconditions that keeps meeting other commits
/// is refused (409); one without is then committed as any transaction
/// (`None`), after which the tracker takes every resource for changed.
fn committed_at_sync(
    app: &App,
    headers: &HeaderMap,
    mut write: impl FnMut(Option<u64>) -> Result<Response, RestError>,
) -> Result<Response, RestError> {
    let gate = || app.write_gate.lock().unwrap_or_else(|p| p.into_inner());
    for attempt in 1..=MOVED_RETRIES {
        let held = gate();
        let revision = app.store.revision()?;
        app.tracker.sync(revision);
        let writing = Writing::start(app);
        match write(Some(revision)) {
            Err(e) if e.moved => {
                drop(writing);
                drop(held);
                canopy::conflict_pause(attempt);
            }
            other => return other,
        }
    }
    if precondition::any(headers) {
        return Err(RestError::new(
            StatusCode::CONFLICT,
            "protocol",
            "in-use",
            "other writers kept committing between this request's check of its preconditions and its commit; \
             nothing of the request was applied",
        ));
    }
    let _held = gate();
    let writing = Writing::start(app);
    let out = write(None);
    drop(writing);
    // Other processes' commits may lie between the revision accounted for
    // and this one: no resource's stamp is trusted to predate them (this
    // write's own commit is accounted for already, should the revision not
    // be read).
    app.tracker.distrust(app.store.revision().unwrap_or(0));
    out
}

/// Commits `edits` on `session`: with `at`, only at that revision (the one
/// the request was checked at), the store having moved on being the outer
/// error ([`RestError::moved`]); the commit's own outcome is the inner
/// result.
pub(crate) fn commit(
    session: &Session<'_>,
    edits: &[Edit],
    at: Option<u64>,
) -> Result<canopy::Result<canopy::Commit>, RestError> {
    let Some(at) = at else { return Ok(session.apply(edits)) };
    match session.apply_at(edits, at) {
        Err(canopy::Error::Store(e)) if e.kind() == canopy_store::ErrorKind::Conflict => {
            Err(RestError::moved(canopy::Error::Store(e)))
        }
        other => Ok(other),
    }
}

/// A plain PUT, POST, PATCH or DELETE: one edit.
#[allow(clippy::too_many_arguments)]
fn write_edit(
    app: &App,
    session: &Session<'_>,
    resolver: &Resolver,
    target: &Target,
    method: &Method,
    params: &Params,
    path: &Path,
    text: &str,
    media: Media,
    at: Option<u64>,
) -> Result<Response, RestError> {
    let stamps = stamps_of(session.datastore());
    let needs_body = *method != Method::DELETE;
    if needs_body && text.trim().is_empty() {
        return Err(RestError::malformed(format!("{method} needs a request body")));
    }
    if resolver.yang.is_some() && media == Media::Json && needs_body {
        // RFC 7951 section 4: a member at the top of a document names its module.
        let members = canopy_core::json::top_level_members(text).map_err(|e| RestError::malformed(e.to_string()))?;
        if let Some(m) = members.iter().find(|m| !m.name.contains(':') && !m.name.starts_with('@')) {
            return Err(RestError::new(
                StatusCode::BAD_REQUEST,
                "protocol",
                "unknown-element",
                format!(
                    "line {}: top-level member `{}` does not name its module (`module:{}`)",
                    m.line, m.name, m.name
                ),
            ));
        }
    }
    if *method != Method::POST
        && resolver.kind(path) == Some(NodeKind::List)
        && path.last().is_some_and(|s| s.selector == Selector::None)
    {
        // RFC 8040 3.5.3, 4.7: a list resource is one entry, named by its keys.
        return Err(RestError::new(
            StatusCode::BAD_REQUEST,
            "protocol",
            "invalid-value",
            format!(
                "{path} is a whole list: {method} takes one entry, named by its keys (`{}=KEY`)",
                path.last().map_or("", |s| s.name.as_str())
            ),
        )
        .at(path.to_string()));
    }
    let insert = insert_of(resolver, params)?;
    let (edit, resource) = match *method {
        Method::PUT => (put_edit(session, path, text, insert)?, path.clone()),
        Method::POST => {
            // RFC 8040 4.4.1: the target resource (the parent) must exist;
            // a non-presence container exists where its parent does.
            let mut holder = path.clone();
            while let (Some(y), Some(_)) = (&resolver.yang, holder.last()) {
                let implicit = y.model().by_path.get(&holder.schema_path()).is_some_and(|&i| {
                    let n = &y.model().nodes[i];
                    n.kind == NodeKind::Container && !n.presence
                });
                if !implicit {
                    break;
                }
                holder = holder.parent().unwrap_or_default();
            }
            if !exists(session, &holder)? {
                return Err(RestError::not_found(&path.to_string()));
            }
            let child = post_child(resolver, path, text)?;
            (session.parse_edit(Operation::Create, child.clone(), Some(text), insert)?, child)
        }
        Method::PATCH => {
            if !exists(session, path)? {
                return Err(RestError::new(
                    StatusCode::NOT_FOUND,
                    "protocol",
                    "invalid-value",
                    format!("{path}: does not exist (PATCH merges into an existing resource)"),
                )
                .at(path.to_string()));
            }
            (merge_edit(session, path, text)?, path.clone())
        }
        _ => (Edit::delete(path.clone()), path.clone()),
    };
    resolver.check_json_kinds(&edit)?;
    if params.insert.is_some() && resolver.user_ordered(&resource) == Some(false) {
        return Err(RestError::invalid(format!(
            "query parameter `insert` applies to entries of lists and leaf-lists ordered by the user; {} is ordered by the system",
            resource.schema_path()
        )));
    }
    let post = *method == Method::POST;
    let commit = commit(session, &[edit], at)?.map_err(|e| match (e, post) {
        // RFC 8040 4.4.1: POST of an existing resource.
        (canopy::Error::Data(canopy_core::Error::Exists { path }), true) => {
            RestError::new(StatusCode::CONFLICT, "application", "resource-denied", format!("{path}: already exists"))
                .at(path)
        }
        (e, _) => RestError::from(e),
    })?;
    let created = commit.changes.iter().any(|c| matches!(c, canopy::Change::Created { path: p, .. } if *p == resource));
    let status = match *method {
        Method::POST => StatusCode::CREATED,
        Method::PUT if created => StatusCode::CREATED,
        _ => StatusCode::NO_CONTENT,
    };
    let mut r = status.into_response();
    r.headers_mut().insert(REVISION_HEADER, HeaderValue::from(commit.revision));
    if *method != Method::DELETE {
        stamp_headers(&mut r, app.tracker.stamp(stamps, &resource));
    }
    if *method == Method::POST || (*method == Method::PUT && created) {
        if let Ok(v) = HeaderValue::from_str(&target.uri_of(&resource)) {
            r.headers_mut().insert(header::LOCATION, v);
        }
    }
    Ok(r)
}

/// The edit of a PUT: replace the target (at the root, the whole datastore,
/// given bare or as `ietf-restconf:data`).
fn put_edit(session: &Session<'_>, path: &Path, text: &str, insert: Option<Insert>) -> Result<Edit, RestError> {
    if path.is_root() {
        let inner = unwrap_data(text)?;
        return Ok(session.parse_edit(
            Operation::Replace,
            Path::root(),
            Some(inner.as_deref().unwrap_or(text)),
            None,
        )?);
    }
    Ok(session.parse_edit(Operation::Replace, path.clone(), Some(text), insert)?)
}

/// The edit of a plain PATCH: merge into the target.
fn merge_edit(session: &Session<'_>, path: &Path, text: &str) -> Result<Edit, RestError> {
    if path.is_root() {
        let inner = unwrap_data(text)?;
        return Ok(session.parse_edit(Operation::Merge, Path::root(), Some(inner.as_deref().unwrap_or(text)), None)?);
    }
    Ok(session.parse_edit(Operation::Merge, path.clone(), Some(text), None)?)
}

/// The content of an `{"ietf-restconf:data": {…}}` document, if it is one.
fn unwrap_data(text: &str) -> Result<Option<String>, RestError> {
    if !text.contains("ietf-restconf:data") {
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    match v.as_object() {
        Some(o) if o.len() == 1 && o.contains_key("ietf-restconf:data") => {
            Ok(Some(o["ietf-restconf:data"].to_string()))
        }
        _ => Ok(None),
    }
}

pub(crate) fn json_error(e: &serde_json::Error) -> RestError {
    RestError::malformed(format!("invalid JSON at line {}, column {}: {e}", e.line(), e.column()))
}

/// The path of the child resource a POST body creates below `parent`: its
/// one member's name, with the keys of a list entry or the value of a
/// leaf-list entry.
fn post_child(resolver: &Resolver, parent: &Path, text: &str) -> Result<Path, RestError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    let Some(obj) = v.as_object().filter(|o| o.len() == 1) else {
        return Err(RestError::invalid("a POST body holds exactly one child resource: an object with one member"));
    };
    let (name, value) = obj.iter().next().expect("one member");
    if parent.is_root() && resolver.yang.is_some() && !name.contains(':') {
        return Err(RestError::invalid(format!("`{name}`: a top-level node is named with its module")));
    }
    let name = canonical_name(name, parent.module());
    let base = parent.child(name.clone(), Selector::None);
    let one = match value {
        serde_json::Value::Array(a) if a.len() == 1 => &a[0],
        serde_json::Value::Array(_) => {
            return Err(RestError::invalid(format!(
                "`{name}`: a POST creates one entry; the array holds another number"
            )))
        }
        v => v,
    };
    let selector = match resolver.kind(&base) {
        Some(NodeKind::List) => {
            let keys = resolver.keys(&base).unwrap_or_default();
            let entry =
                one.as_object().ok_or_else(|| RestError::invalid(format!("`{name}`: a list entry is an object")))?;
            let mut kv = Vec::new();
            for k in &keys {
                let val = entry
                    .get(k.as_str())
                    .or_else(|| {
                        entry.iter().find(|(n, _)| n.split_once(':').is_some_and(|(_, l)| l == k)).map(|(_, v)| v)
                    })
                    .ok_or_else(|| {
                        RestError::new(
                            StatusCode::BAD_REQUEST,
                            "application",
                            "missing-element",
                            format!("`{name}`: the entry has no key leaf `{k}`"),
                        )
                    })?;
                kv.push((k.clone(), scalar_text(val).into()));
            }
            if keys.is_empty() {
                Selector::None
            } else {
                Selector::Keys(kv)
            }
        }
        Some(NodeKind::LeafList) => Selector::Value(scalar_text(one)),
        _ => Selector::None,
    };
    let child = parent.child(name, selector);
    match &resolver.yang {
        Some(y) => y.resolve_path(&child).map(|(p, _)| p).map_err(|e| RestError::invalid(e.to_string())),
        None => Ok(child),
    }
}

fn scalar_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) if a.len() == 1 && a[0].is_null() => "[null]".into(),
        other => other.to_string(),
    }
}

/// The position `insert`/`point` ask for.
fn insert_of(resolver: &Resolver, params: &Params) -> Result<Option<Insert>, RestError> {
    let Some(at) = params.insert else { return Ok(None) };
    Ok(Some(match at {
        InsertAt::First => Insert::First,
        InsertAt::Last => Insert::Last,
        InsertAt::Before | InsertAt::After => {
            let raw = params.point.as_deref().unwrap_or_default();
            let raw = raw.strip_prefix("/restconf/data").unwrap_or(raw);
            let point = resolver.to_path(raw)?;
            let values = match point.last().map(|s| &s.selector) {
                Some(Selector::Keys(kv)) => kv.iter().map(|(_, v)| v.to_string()).collect(),
                Some(Selector::Value(v)) => vec![v.clone()],
                _ => return Err(RestError::invalid(format!("`point` {raw} is not a list or leaf-list entry"))),
            };
            match at {
                InsertAt::Before => Insert::Before(values),
                _ => Insert::After(values),
            }
        }
    }))
}
