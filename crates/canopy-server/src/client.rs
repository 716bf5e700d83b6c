//! The client side of `canopy serve` for other processes: remote change
//! subscribers and operational providers ([`Remote`], over the WebSocket of
//! [`crate::remote`]) and change streams ([`watch`], Server-Sent Events).
//!
//! ```no_run
//! use canopy_server::client::{Remote, RemoteEvent};
//! let mut remote = Remote::connect("http://127.0.0.1:8040", None)?;
//! remote.subscribe("running", "/example-jukebox:jukebox", 10, std::time::Duration::from_secs(2),
//!     |ev: &RemoteEvent| if ev.phase == "validate" && ev.patch.to_string().contains("forbidden") {
//!         Err("no forbidden songs".to_string())
//!     } else { Ok(()) })?;
//! remote.run()?; // answers until the connection ends
//! # Ok::<(), canopy_server::client::ClientError>(())
//! ```

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value as Json};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    #[error("invalid server URL `{0}`: {1}")]
    Url(String, String),
    #[error("connecting to {0}: {1}")]
    Connect(String, String),
    #[error("the server refused: {0}")]
    Refused(String),
    #[error("the connection to the server failed: {0}")]
    Io(String),
}

/// Credentials for a server with authentication on.
#[derive(Clone, Debug)]
pub enum Auth {
    Basic { user: String, password: String },
    Bearer(String),
}

impl Auth {
    fn header(&self) -> String {
        use base64::Engine;
        match self {
            Auth::Basic { user, password } => {
                format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
            }
            Auth::Bearer(t) => format!("Bearer {t}"),
        }
    }
}

/// One event a remote subscriber gets.
#[derive(Clone, Debug)]
pub struct RemoteEvent {
    /// `validate`, `apply` or `abort`.
    pub phase: String,
    pub datastore: String,
    /// The committed revision (`apply` only).
    pub revision: Option<u64>,
    /// The changes inside the subscribed subtree, as an
    /// `ietf-yang-patch:yang-patch` document.
    pub patch: Json,
}

type Handler = Box<dyn FnMut(&RemoteEvent) -> Result<(), String> + Send>;
type ProvideHandler = Box<dyn FnMut(&str) -> Result<String, String> + Send>;

/// A connection on which this process subscribes and provides.
pub struct Remote {
    socket: WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next_id: u64,
    subs: HashMap<u64, Handler>,
    provs: HashMap<u64, ProvideHandler>,
}

/// `http://host:port` → `host:port`.
fn authority(url: &str) -> Result<&str, ClientError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| ClientError::Url(url.into(), "expected http://HOST:PORT (this client speaks no TLS)".into()))?;
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains('/') {
        return Err(ClientError::Url(url.into(), "expected http://HOST:PORT".into()));
    }
    Ok(host)
}

impl Remote {
    /// Connects to the server at `url` (`http://127.0.0.1:8040`).
    ///
    /// # Errors
    /// A bad URL, an unreachable server, refused credentials.
    pub fn connect(url: &str, auth: Option<&Auth>) -> Result<Remote, ClientError> {
        let host = authority(url)?;
        let mut req = format!("ws://{host}/canopy/ws")
            .into_client_request()
            .map_err(|e| ClientError::Url(url.into(), e.to_string()))?;
        if let Some(a) = auth {
            if let Ok(v) = a.header().parse() {
                req.headers_mut().insert("authorization", v);
            }
        }
        let (socket, _) = tungstenite::connect(req).map_err(|e| match e {
            tungstenite::Error::Http(r) => ClientError::Refused(format!("HTTP {}", r.status())),
            e => ClientError::Connect(host.into(), e.to_string()),
        })?;
        Ok(Remote { socket, next_id: 1, subs: HashMap::new(), provs: HashMap::new() })
    }

    fn request(&mut self, mut msg: Json) -> Result<Json, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        msg["id"] = id.into();
        self.socket.send(Message::Text(msg.to_string().into())).map_err(|e| ClientError::Io(e.to_string()))?;
        loop {
            let answer = self.read()?;
            if answer.get("id").and_then(Json::as_u64) == Some(id) {
                if answer["op"] == "error" {
                    return Err(ClientError::Refused(answer["message"].as_str().unwrap_or_default().to_string()));
                }
                return Ok(answer);
            }
            // Events that arrive meanwhile are served in order.
            self.dispatch(&answer)?;
        }
    }

    fn read(&mut self) -> Result<Json, ClientError> {
        loop {
            match self.socket.read().map_err(|e| ClientError::Io(e.to_string()))? {
                Message::Text(t) => {
                    return serde_json::from_str(t.as_str()).map_err(|e| ClientError::Io(format!("bad message: {e}")))
                }
                Message::Close(_) => return Err(ClientError::Io("the server closed the connection".into())),
                _ => {}
            }
        }
    }

    /// Subscribes to changes of `path` in `datastore`: `handler` gets every
    /// event (`validate`: its `Err` rejects the commit with that message;
    /// `apply`, `abort`: its result is ignored). The server waits `timeout`
    /// for each validate answer. Events are handled in [`Remote::run`].
    ///
    /// # Errors
    /// The server refuses (bad path or datastore; with authentication, a
    /// user without write access to `datastore`); the connection fails.
    pub fn subscribe(
        &mut self,
        datastore: &str,
        path: &str,
        priority: i32,
        timeout: Duration,
        handler: impl FnMut(&RemoteEvent) -> Result<(), String> + Send + 'static,
    ) -> Result<u64, ClientError> {
        let answer = self.request(json!({
            "op": "subscribe", "datastore": datastore, "path": path,
            "priority": priority, "timeout_ms": timeout.as_millis() as u64,
        }))?;
        let sub = answer["sub"].as_u64().unwrap_or_default();
        self.subs.insert(sub, Box::new(handler));
        Ok(sub)
    }

    /// Watches the changes of `path` in `datastore` without taking part in
    /// commits: `handler` gets each `apply` and `abort` event, never
    /// `validate`, so this subscriber cannot veto or hold up a commit. With
    /// authentication it needs only read access to `datastore` ([`Remote::subscribe`]
    /// needs write access).
    ///
    /// # Errors
    /// As [`Remote::subscribe`].
    pub fn observe(
        &mut self,
        datastore: &str,
        path: &str,
        handler: impl FnMut(&RemoteEvent) -> Result<(), String> + Send + 'static,
    ) -> Result<u64, ClientError> {
        let answer = self.request(json!({
            "op": "subscribe", "datastore": datastore, "path": path, "validate": false,
        }))?;
        let sub = answer["sub"].as_u64().unwrap_or_default();
        self.subs.insert(sub, Box::new(handler));
        Ok(sub)
    }

    /// Provides operational state below `path`: `handler` gets the path read
    /// and returns an RFC 7951 JSON document from the datastore root.
    ///
    /// # Errors
    /// As [`Remote::subscribe`].
    pub fn provide(
        &mut self,
        path: &str,
        timeout: Duration,
        handler: impl FnMut(&str) -> Result<String, String> + Send + 'static,
    ) -> Result<u64, ClientError> {
        let answer =
            self.request(json!({ "op": "provide", "path": path, "timeout_ms": timeout.as_millis() as u64 }))?;
        let prov = answer["prov"].as_u64().unwrap_or_default();
        self.provs.insert(prov, Box::new(handler));
        Ok(prov)
    }

    /// Serves events until the connection ends.
    ///
    /// # Errors
    /// The connection fails or the server closes it.
    pub fn run(&mut self) -> Result<(), ClientError> {
        loop {
            let msg = self.read()?;
            self.dispatch(&msg)?;
        }
    }

    fn dispatch(&mut self, msg: &Json) -> Result<(), ClientError> {
        let op = msg["op"].as_str().unwrap_or_default();
        let reply = match op {
            "validate" | "apply" | "abort" => {
                let Some(h) = msg["sub"].as_u64().and_then(|s| self.subs.get_mut(&s)) else { return Ok(()) };
                let ev = RemoteEvent {
                    phase: op.to_string(),
                    datastore: msg["datastore"].as_str().unwrap_or_default().to_string(),
                    revision: msg["revision"].as_u64(),
                    patch: msg["changes"].clone(),
                };
                let r = h(&ev);
                if op != "validate" {
                    return Ok(());
                }
                match r {
                    Ok(()) => json!({ "op": "reply", "call": msg["call"], "ok": true }),
                    Err(why) => json!({ "op": "reply", "call": msg["call"], "ok": false, "error": why }),
                }
            }
            "provide" => {
                let Some(h) = msg["prov"].as_u64().and_then(|p| self.provs.get_mut(&p)) else { return Ok(()) };
                match h(msg["path"].as_str().unwrap_or("/")) {
                    Ok(doc) => match serde_json::from_str::<Json>(&doc) {
                        Ok(d) => json!({ "op": "reply", "call": msg["call"], "data": d }),
                        Err(e) => {
                            json!({ "op": "reply", "call": msg["call"], "error": format!("the provider's JSON: {e}") })
                        }
                    },
                    Err(why) => json!({ "op": "reply", "call": msg["call"], "error": why }),
                }
            }
            _ => return Ok(()),
        };
        self.socket.send(Message::Text(reply.to_string().into())).map_err(|e| ClientError::Io(e.to_string()))
    }
}

/// One Server-Sent Event of a change stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamEvent {
    /// The commit's revision.
    pub id: Option<String>,
    /// `None` for a change; `resync` when commits were missed.
    pub event: Option<String>,
    pub data: String,
}

/// Follows the change stream of `datastore` below `path` (`None`: all),
/// from after revision `since` (`None`: from now), calling `on_event` for
/// each event until it returns `false` or the stream ends.
///
/// # Errors
/// A bad URL, an unreachable server, a refused request.
pub fn watch(
    url: &str,
    auth: Option<&Auth>,
    datastore: &str,
    path: Option<&str>,
    since: Option<u64>,
    mut on_event: impl FnMut(&StreamEvent) -> bool,
) -> Result<(), ClientError> {
    let host = authority(url)?;
    let mut stream = TcpStream::connect(host).map_err(|e| ClientError::Connect(host.into(), e.to_string()))?;
    let mut target = format!("/restconf/streams/{datastore}");
    if let Some(p) = path {
        target.push_str("?path=");
        target.extend(percent_encoding::utf8_percent_encode(p, percent_encoding::NON_ALPHANUMERIC));
    }
    let mut req =
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nConnection: close\r\n");
    if let Some(a) = auth {
        req.push_str(&format!("Authorization: {}\r\n", a.header()));
    }
    if let Some(s) = since {
        req.push_str(&format!("Last-Event-ID: {s}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).map_err(|e| ClientError::Io(e.to_string()))?;
    let mut r = BufReader::new(stream);
    let mut status = String::new();
    r.read_line(&mut status).map_err(|e| ClientError::Io(e.to_string()))?;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).map_err(|e| ClientError::Io(e.to_string()))?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        }
    }
    if status.split_whitespace().nth(1) != Some("200") {
        let mut body = String::new();
        let _ = r.take(64 * 1024).read_to_string(&mut body);
        return Err(ClientError::Refused(format!("{} {}", status.trim(), body.trim())));
    }
    let mut body: Box<dyn BufRead> = match chunked {
        true => Box::new(BufReader::new(Dechunk { inner: r, left: 0, done: false })),
        false => Box::new(r),
    };
    let mut ev = StreamEvent::default();
    loop {
        let mut line = String::new();
        if body.read_line(&mut line).map_err(|e| ClientError::Io(e.to_string()))? == 0 {
            return Ok(());
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if (!ev.data.is_empty() || ev.event.is_some()) && !on_event(&ev) {
                return Ok(());
            }
            ev = StreamEvent::default();
            continue;
        }
        let (field, value) = l.split_once(':').map_or((l, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "id" => ev.id = Some(value.to_string()),
            "event" => ev.event = Some(value.to_string()),
            "data" => {
                if !ev.data.is_empty() {
                    ev.data.push('\n');
                }
                ev.data.push_str(value);
            }
            _ => {}
        }
    }
}

/// Reads an HTTP/1.1 chunked body.
struct Dechunk<R: BufRead> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Read for Dechunk<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            if self.inner.read_line(&mut size)? == 0 {
                self.done = true;
                return Ok(0);
            }
            if size.trim().is_empty() {
                size.clear();
                self.inner.read_line(&mut size)?;
            }
            let hex = size.trim().split(';').next().unwrap_or_default();
            self.left = usize::from_str_radix(hex, 16)
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size"))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let take = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..take])?;
        self.left -= n;
        if self.left == 0 {
            let mut crlf = [0u8; 2];
            self.inner.read_exact(&mut crlf)?;
        }
        Ok(n)
    }
}
