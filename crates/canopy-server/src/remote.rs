//! Remote subscribers and providers: other processes take part in commits
//! over a WebSocket on `/canopy/ws`, as sysrepo's applications do over shared
//! memory.
//!
//! A client registers change subscriptions (datastore, subtree, priority,
//! timeout) and operational providers (subtree, timeout). For each commit
//! that touches a subscribed subtree the server sends `validate` and waits
//! for the reply on the committing thread: a rejection aborts the commit with
//! the client's message; no answer within the timeout, or a connection that
//! drops, aborts it too and drops the client. Then `apply` or `abort` follow.
//! A subscription registered with `"validate": false` only watches: it gets
//! `apply` and `abort`, is never asked to validate and cannot hold up or veto
//! a commit. A read of operational that reaches a provider's subtree asks it
//! for state.
//!
//! With users, each registration needs rights on its datastore: watching
//! needs `ro` (the changes are data of that datastore); a validating
//! subscription needs `rw` (its veto decides what the datastore holds, and
//! a slow answer holds up every writer); a provider needs `rw` on
//! operational (the state it serves is what operational reads show).
//!
//! Messages are JSON text frames; [`crate::client`] speaks them. Every
//! message has an `op`:
//! - client → server: `subscribe {id, datastore, path, priority, timeout_ms, validate?}`,
//!   `provide {id, path, timeout_ms}`, `reply {call, ok, error?}` (validate),
//!   `reply {call, data | error}` (provide);
//! - server → client: `subscribed {id, sub}`, `providing {id, prov}`,
//!   `error {id?, message}`, `validate {call, sub, datastore, changes}`,
//!   `apply {sub, datastore, revision, changes}`, `abort {sub, datastore, changes}`,
//!   `provide {call, prov, path}`.
//!
//! `changes` is an `ietf-yang-patch:yang-patch` document.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, Weak};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use canopy::{Change, ChangeEvent, Provider, Subscriber, Subscription};
use canopy_core::json::JsonWriter;
use serde_json::{json, Value as Json};

use crate::auth::Granted;
use crate::output::write_patch;
use crate::users::Mode;
use crate::App;

/// The longest a client may ask the server to wait for one answer.
const MAX_TIMEOUT: Duration = Duration::from_secs(300);
/// The wait when the client names none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// A reply to a call.
enum Reply {
    Ok,
    Rejected(String),
    Data(String),
}

/// One client connection, as the engine's callbacks see it.
struct Conn {
    peer: String,
    out: tokio::sync::mpsc::UnboundedSender<String>,
    calls: Mutex<HashMap<u64, mpsc::Sender<Reply>>>,
    next_call: AtomicU64,
    alive: AtomicBool,
    /// Closes the connection (a call timed out).
    kill: tokio::sync::Notify,
}

impl Conn {
    /// Sends a call and waits for its reply.
    /// Sends the message `msg` makes of a call id and waits for its reply.
    fn call(&self, msg: impl FnOnce(u64) -> String, timeout: Duration, what: &str) -> Result<Reply, String> {
        if !self.alive.load(Ordering::Acquire) {
            return Err(format!("the remote {what} at {} is disconnected", self.peer));
        }
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).insert(id, tx);
        let sent = self.out.send(msg(id)).is_ok();
        let result = match sent {
            false => Err(format!("the remote {what} at {} is disconnected", self.peer)),
            true => match rx.recv_timeout(timeout) {
                Ok(r) => Ok(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // A client that does not answer is dropped.
                    self.alive.store(false, Ordering::Release);
                    self.kill.notify_one();
                    Err(format!(
                        "the remote {what} at {} did not answer within {} ms; it is disconnected",
                        self.peer,
                        timeout.as_millis()
                    ))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    Err(format!("the remote {what} at {} disconnected before answering", self.peer))
                }
            },
        };
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        result
    }

    fn send(&self, msg: String) {
        if self.alive.load(Ordering::Acquire) {
            let _ = self.out.send(msg);
        }
    }
}

/// A subscriber message (`op` and its fields as JSON members, without
/// braces) with the event's changes as `changes`: an
/// `{"ietf-yang-patch:yang-patch": …}` document written straight from them.
fn event_message(head: &str, ev: &ChangeEvent<'_>) -> String {
    let changes: Vec<&Change> = ev.changes().collect();
    let id =
        format!("{}-{}", ev.datastore.name(), ev.revision.map_or_else(|| "pending".to_string(), |r| r.to_string()));
    let mut out = format!("{{{head},\"changes\":").into_bytes();
    let mut w = JsonWriter::new(&mut out, false);
    // Writing into a Vec fails only on events out of order, which write_patch never makes.
    let _ = write_patch(&mut w, &id, &changes).and_then(|()| w.finish().map(drop));
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

struct RemoteSub {
    conn: Arc<Conn>,
    sub: u64,
    timeout: Duration,
    /// Asked to validate; `false`: it only watches.
    validating: bool,
}

impl RemoteSub {
    /// The members of an event message before its changes.
    fn head(&self, op: &str, ev: &ChangeEvent<'_>, call: Option<u64>) -> String {
        let mut head = format!("\"op\":\"{op}\",\"sub\":{},\"datastore\":\"{}\"", self.sub, ev.datastore.name());
        if let Some(r) = ev.revision {
            head.push_str(&format!(",\"revision\":{r}"));
        }
        if let Some(c) = call {
            head.push_str(&format!(",\"call\":{c}"));
        }
        head
    }
}

impl Subscriber for RemoteSub {
    fn validate(&self, ev: &ChangeEvent<'_>) -> Result<(), String> {
        if !self.validating {
            return Ok(());
        }
        let msg = |call| event_message(&self.head("validate", ev, Some(call)), ev);
        match self.conn.call(msg, self.timeout, "subscriber")? {
            Reply::Ok => Ok(()),
            Reply::Rejected(why) => Err(why),
            Reply::Data(_) => Err(format!("the remote subscriber at {} answered with data", self.conn.peer)),
        }
    }

    fn apply(&self, ev: &ChangeEvent<'_>) {
        self.conn.send(event_message(&self.head("apply", ev, None), ev));
    }

    fn abort(&self, ev: &ChangeEvent<'_>) {
        self.conn.send(event_message(&self.head("abort", ev, None), ev));
    }
}

/// `GET /canopy/ws` (a WebSocket upgrade).
pub async fn upgrade(
    State(app): State<Arc<App>>,
    ConnectInfo(crate::PeerAddr(addr)): ConnectInfo<crate::PeerAddr>,
    granted: Option<axum::Extension<Granted>>,
    ws: WebSocketUpgrade,
) -> Response {
    let peer = addr.to_string();
    let weak = Arc::downgrade(&app);
    drop(app);
    let granted = granted.map(|axum::Extension(g)| g);
    ws.max_message_size(64 << 20).on_upgrade(move |socket| session(weak, socket, peer, granted))
}

/// What a connection registered; dropping it unregisters.
#[derive(Default)]
struct Held {
    subs: Vec<Subscription>,
    provs: Vec<Provider>,
}

/// `granted`: the user, when the server has users (`None`: no authentication,
/// every registration is allowed).
async fn session(app: Weak<App>, mut socket: WebSocket, peer: String, granted: Option<Granted>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let conn = Arc::new(Conn {
        peer,
        out: tx,
        calls: Mutex::new(HashMap::new()),
        next_call: AtomicU64::new(1),
        alive: AtomicBool::new(true),
        kill: tokio::sync::Notify::new(),
    });
    let mut held = Held::default();
    let mut shutdown = match app.upgrade() {
        Some(a) => a.shutdown.subscribe(),
        None => return,
    };
    loop {
        tokio::select! {
            msg = socket.recv() => {
                let text = match msg {
                    Some(Ok(Message::Text(t))) => t.to_string(),
                    Some(Ok(Message::Binary(_))) => {
                        let _ = socket.send(Message::Text(error(None, "messages are JSON text").into())).await;
                        continue;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                };
                let Some(app) = app.upgrade() else { break };
                if let Some(answer) = handle(&app, &conn, granted.as_ref(), &mut held, &text) {
                    if socket.send(Message::Text(answer.into())).await.is_err() {
                        break;
                    }
                }
            }
            out = rx.recv() => match out {
                Some(text) => if socket.send(Message::Text(text.into())).await.is_err() { break },
                None => break,
            },
            () = conn.kill.notified() => break,
            _ = shutdown.changed() => break,
        }
    }
    conn.alive.store(false, Ordering::Release);
    // Pending calls see their sender dropped: the commits they hold abort.
    conn.calls.lock().unwrap_or_else(|p| p.into_inner()).clear();
    drop(held);
    let _ = socket.send(Message::Close(None)).await;
}

fn error(id: Option<u64>, message: &str) -> String {
    json!({ "op": "error", "id": id, "message": message }).to_string()
}

fn timeout_of(msg: &Json) -> Duration {
    msg.get("timeout_ms").and_then(Json::as_u64).map_or(DEFAULT_TIMEOUT, Duration::from_millis).min(MAX_TIMEOUT)
}

/// Handles one client message; returns the answer to send, if any.
fn handle(app: &App, conn: &Arc<Conn>, granted: Option<&Granted>, held: &mut Held, text: &str) -> Option<String> {
    let require = |ds, mode, why| granted.map_or(Ok(()), |g| g.require(ds, mode, why));
    let msg: Json = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => return Some(error(None, &format!("invalid JSON at line {}, column {}: {e}", e.line(), e.column()))),
    };
    let id = msg.get("id").and_then(Json::as_u64);
    let path = msg.get("path").and_then(Json::as_str).unwrap_or("/");
    match msg.get("op").and_then(Json::as_str).unwrap_or_default() {
        "subscribe" => {
            let name = msg.get("datastore").and_then(Json::as_str).unwrap_or("running");
            let Some(ds) = crate::uri::datastore_named(name) else {
                return Some(error(id, &format!("no datastore `{name}`")));
            };
            let validating = msg.get("validate").and_then(Json::as_bool).unwrap_or(true);
            let allowed = match validating {
                true => require(
                    ds,
                    Mode::Write,
                    "a validating subscriber needs rw; to watch, subscribe with validate false",
                ),
                false => require(ds, Mode::Read, "watching its changes needs ro"),
            };
            if let Err(why) = allowed {
                return Some(error(id, &why));
            }
            let priority = msg.get("priority").and_then(Json::as_i64).unwrap_or(0);
            let priority = i32::try_from(priority).unwrap_or(if priority < 0 { i32::MIN } else { i32::MAX });
            let sub = conn.next_call.fetch_add(1, Ordering::Relaxed);
            let s = RemoteSub { conn: conn.clone(), sub, timeout: timeout_of(&msg), validating };
            match app.store.subscribe(ds, path, priority, s) {
                Ok(handle) => {
                    held.subs.push(handle);
                    Some(json!({ "op": "subscribed", "id": id, "sub": sub }).to_string())
                }
                Err(e) => Some(error(id, &e.to_string())),
            }
        }
        "provide" => {
            if let Err(why) = require(canopy::Datastore::Operational, Mode::Write, "a provider serves its state") {
                return Some(error(id, &why));
            }
            let prov = conn.next_call.fetch_add(1, Ordering::Relaxed);
            let c = conn.clone();
            let timeout = timeout_of(&msg);
            let lists = match app.store.known_lists() {
                Ok(l) => l,
                Err(e) => return Some(error(id, &e.to_string())),
            };
            let provide = move |p: &canopy::Path| -> Result<canopy::Container, String> {
                let msg =
                    |call| json!({ "op": "provide", "call": call, "prov": prov, "path": p.to_string() }).to_string();
                match c.call(msg, timeout, "provider")? {
                    Reply::Data(doc) => canopy_core::json::parse_str(&doc, &*lists)
                        .map_err(|e| format!("the remote provider at {} sent {e}", c.peer)),
                    Reply::Rejected(why) => Err(why),
                    Reply::Ok => Ok(canopy::Container::default()),
                }
            };
            match app.store.provide(path, provide) {
                Ok(handle) => {
                    held.provs.push(handle);
                    Some(json!({ "op": "providing", "id": id, "prov": prov }).to_string())
                }
                Err(e) => Some(error(id, &e.to_string())),
            }
        }
        "reply" => {
            let call = msg.get("call").and_then(Json::as_u64)?;
            let reply = if let Some(e) = msg.get("error").and_then(Json::as_str) {
                Reply::Rejected(e.to_string())
            } else if let Some(d) = msg.get("data") {
                Reply::Data(d.to_string())
            } else if msg.get("ok").and_then(Json::as_bool) == Some(false) {
                Reply::Rejected("rejected".to_string())
            } else {
                Reply::Ok
            };
            let waiting = conn.calls.lock().unwrap_or_else(|p| p.into_inner()).remove(&call);
            match waiting {
                Some(tx) => {
                    let _ = tx.send(reply);
                    None
                }
                None => Some(error(None, &format!("no call {call} is waiting (it timed out or was answered)"))),
            }
        }
        other => Some(error(id, &format!("unknown op `{other}` (subscribe, provide, reply)"))),
    }
}
