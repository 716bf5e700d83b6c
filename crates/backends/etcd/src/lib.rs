//! canopy's etcd backend: `etcd://HOST:PORT?prefix=P`, over etcd's JSON
//! gateway (`/v3/kv/range`, `/v3/kv/txn`), synchronous like every backend.
//!
//! * Layout: the store's keys under `P/d/` (etcd orders keys bytewise:
//!   canopy's order, so a subtree is one key range), its revision under
//!   `P/rev` (8 bytes big-endian). One store per prefix.
//! * Snapshots: etcd keeps every revision of its key space until it is
//!   compacted: a snapshot reads the revision key once, then reads at the
//!   etcd revision of that answer (`"revision"` of a range request), so all
//!   its reads see one state without holding anything on the server.
//! * A commit is one `Txn`: it compares the revision key with the revision
//!   the batch was built on (or its absence, for revision 0), then writes the
//!   batch and the next revision. etcd refuses a transaction that writes one
//!   key twice or puts a key inside a range it deletes, so the batch is first
//!   reduced to its effect: the last write of each key, and prefix deletes
//!   split around the keys put after them.
//! * etcd's defaults allow 128 operations (`--max-txn-ops`) and 1.5 MiB
//!   (`--max-request-bytes`) per transaction: a larger commit fails whole, with
//!   an error naming the flag to raise. `scripts/servers.sh` raises both.
//! * Durability: etcd writes and flushes its log before it acknowledges a
//!   transaction, whatever `sync` says (`sync=off` changes nothing).
//! * Reverse scans are slow on big ranges: etcd sorts a whole range to return
//!   its last keys.

mod lease;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use canopy_store::backend::{
    prefix_end, Announcements, Backend, Batch, BatchOp, ChannelAnnouncements, Heard, Snapshot, SyncMode, Visit,
};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::StoreUrl;
use serde_json::{json, Value};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// A watch quiet this long is made again (and its thread ends when nobody
/// listens any more).
const WATCH_READ: Duration = Duration::from_secs(5);
const FIRST_PAGE: i64 = 64;
const MAX_PAGE: i64 = 4096;
/// Attempts of a batch that expects no revision (another writer may commit in between).
const UNCONDITIONAL_ATTEMPTS: usize = 100;

/// A store under one key prefix of an etcd cluster.
pub struct EtcdBackend {
    agent: ureq::Agent,
    /// `http://HOST:PORT/v3`
    base: String,
    /// `etcd server HOST:PORT (prefix P)`: what messages name.
    place: String,
    /// `P/d/`: the store's keys follow it.
    data: Vec<u8>,
    /// `P/rev`
    rev_key: Vec<u8>,
    /// `P`: leases are under `P/lease/`.
    prefix: String,
    /// How long this process's lease outlives its last keepalive (`lease`).
    lease_time: Duration,
    sync: SyncMode,
}

fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

fn field_bytes(v: &Value, name: &str) -> Option<Vec<u8>> {
    match v.get(name) {
        None => Some(Vec::new()),
        Some(Value::String(s)) => B64.decode(s).ok(),
        Some(_) => None,
    }
}

fn field_i64(v: &Value, name: &str) -> Option<i64> {
    match v.get(name) {
        None => Some(0),
        Some(Value::String(s)) => s.parse().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        Some(_) => None,
    }
}

fn concat(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(a.len() + b.len());
    v.extend_from_slice(a);
    v.extend_from_slice(b);
    v
}

impl EtcdBackend {
    /// Opens the store a URL names: `etcd://HOST:PORT?prefix=P`
    /// (`connect_timeout=5s`, `timeout=60s` per request, `sync` accepted,
    /// `lease=10s`: the time of this process's lease, see [`Backend::lease`]).
    ///
    /// # Errors
    /// `InvalidUrl` for a URL that does not parse or unknown parameters;
    /// `Unsupported` for credentials (etcd authentication is not built in);
    /// `Unavailable` when the server cannot be reached.
    pub fn open_url(url: &StoreUrl) -> Result<EtcdBackend> {
        url.check_params(&["sync", "prefix", "connect_timeout", "timeout", "lease"])?;
        let bad = |why: String| {
            StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {why}", url.redacted()))
        };
        let parsed = url::Url::parse(&format!("etcd:{}", url.location)).map_err(|e| bad(e.to_string()))?;
        let host = match parsed.host_str() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => return Err(bad("no server host (etcd://HOST:PORT)".into())),
        };
        let port = parsed.port().unwrap_or(2379);
        if !matches!(parsed.path(), "" | "/") {
            return Err(bad(format!("`{}`: an etcd URL has no path (the namespace is ?prefix=)", parsed.path())));
        }
        let prefix = url.params.get("prefix").cloned().unwrap_or_else(|| "canopy".into());
        // No `/`: one store's keys are never inside another's prefix.
        if prefix.is_empty() || prefix.len() > 200 || prefix.contains('/') {
            return Err(bad(format!("prefix `{prefix}`: expected 1 to 200 characters without `/`")));
        }
        let place = format!("etcd server {host}:{port} (prefix {prefix})");
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                format!("{place}: etcd authentication is not built into this backend yet"),
            ));
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(url.duration("connect_timeout", CONNECT_TIMEOUT)?)
            .timeout(url.duration("timeout", IO_TIMEOUT)?)
            .build();
        let host_part = if host.contains(':') { format!("[{host}]") } else { host.clone() };
        let backend = EtcdBackend {
            agent,
            base: format!("http://{host_part}:{port}/v3"),
            place,
            data: format!("{prefix}/d/").into_bytes(),
            rev_key: format!("{prefix}/rev").into_bytes(),
            lease_time: canopy_store::lease::lease_time(url)?,
            prefix,
            sync: url.sync_mode()?,
        };
        // Reachable, and its revision record readable.
        backend.current()?;
        Ok(backend)
    }

    /// A request that changes nothing: sent again once when the connection
    /// fails on the way (a pooled connection the server closed).
    fn read(&self, what: &str, endpoint: &str, body: &Value) -> Result<Value> {
        match self.call(what, endpoint, body) {
            Err(e) if e.kind() == ErrorKind::Unavailable && !e.to_string().contains("timed out") => {
                self.call(what, endpoint, body)
            }
            other => other,
        }
    }

    /// One request to the gateway.
    fn call(&self, what: &str, endpoint: &str, body: &Value) -> Result<Value> {
        let url = format!("{}/{endpoint}", self.base);
        let reply = self.agent.post(&url).set("Content-Type", "application/json").send_string(&body.to_string());
        match reply {
            Ok(resp) => serde_json::from_reader(resp.into_reader()).map_err(|e| {
                StoreError::new(
                    ErrorKind::Io,
                    format!("{}: {what}: the server's answer does not parse: {e}", self.place),
                )
            }),
            Err(ureq::Error::Status(code, resp)) => {
                let text = resp.into_string().unwrap_or_default();
                let message = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("message").or(v.get("error")).and_then(Value::as_str).map(str::to_string))
                    .unwrap_or(text);
                Err(self.server_error(what, code, &message))
            }
            Err(ureq::Error::Transport(t)) => {
                let timed_out = t.to_string().contains("timed out");
                let why = if timed_out { "timed out" } else { "unreachable" };
                Err(StoreError::new(ErrorKind::Unavailable, format!("{}: {what}: {why} ({t})", self.place)))
            }
        }
    }

    fn server_error(&self, what: &str, code: u16, message: &str) -> StoreError {
        let (kind, hint) = if message.contains("too many operations in txn request") {
            (
                ErrorKind::Unsupported,
                " (the commit has more operations than the server allows in one transaction: \
                 start etcd with a larger --max-txn-ops, 128 by default)",
            )
        } else if message.contains("request is too large") || message.contains("larger than max") {
            (
                ErrorKind::Unsupported,
                " (the commit is larger than the server accepts in one request: start etcd with a \
                 larger --max-request-bytes, 1.5 MiB by default)",
            )
        } else if message.contains("database space exceeded") {
            (ErrorKind::NoSpace, " (the server's --quota-backend-bytes is reached)")
        } else if message.contains("has been compacted") {
            (ErrorKind::Unavailable, " (the snapshot's revision was compacted on the server)")
        } else if code == 503 || message.contains("leader") || message.contains("timed out") {
            (ErrorKind::Unavailable, "")
        } else {
            (ErrorKind::Io, "")
        };
        StoreError::new(kind, format!("{}: {what}: {message}{hint}", self.place))
    }

    fn damaged(&self, what: &str) -> StoreError {
        StoreError::corrupted(format!("{}: {what}: the server's answer is not what canopy stored", self.place))
    }

    /// The store's revision and the etcd revision it was read at.
    fn current(&self) -> Result<(u64, i64)> {
        let reply = self.read("read the revision", "kv/range", &json!({ "key": b64(&self.rev_key) }))?;
        let at = reply.get("header").and_then(|h| field_i64(h, "revision")).ok_or_else(|| self.damaged("revision"))?;
        let revision = match reply.get("kvs").and_then(Value::as_array).and_then(|a| a.first()) {
            None => 0,
            Some(kv) => field_bytes(kv, "value")
                .and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes))
                .ok_or_else(|| StoreError::corrupted(format!("{}: the revision record is damaged", self.place)))?,
        };
        Ok((revision, at))
    }

    /// The end of the store's key range (exclusive) for a key range end.
    fn data_end(&self, end: Option<&[u8]>) -> Vec<u8> {
        match end {
            Some(e) => concat(&self.data, e),
            None => prefix_end(&self.data).expect("the data prefix ends in `/`"),
        }
    }

    /// The transaction operations of `batch`: its effect, with no key written
    /// twice and no put inside a deleted range.
    fn txn_ops(&self, batch: &Batch) -> Vec<Value> {
        let mut puts: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
        let mut deletes: BTreeSet<&[u8]> = BTreeSet::new();
        let mut ranges: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        let inside = |k: &[u8], lo: &[u8], hi: &Option<Vec<u8>>| k >= lo && hi.as_deref().is_none_or(|h| k < h);
        for op in &batch.ops {
            match op {
                BatchOp::Put(k, v) => {
                    deletes.remove(k.as_slice());
                    puts.insert(k, v);
                }
                BatchOp::Delete(k) => {
                    puts.remove(k.as_slice());
                    deletes.insert(k);
                }
                BatchOp::DeletePrefix(p) => {
                    let end = prefix_end(p);
                    puts.retain(|k, _| !inside(k, p, &end));
                    deletes.retain(|k| !inside(k, p, &end));
                    ranges.push((p.clone(), end));
                }
            }
        }
        // Overlapping ranges merged; keys they cover need no delete of their own.
        ranges.sort();
        let mut merged: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some((_, last_hi)) if last_hi.as_deref().is_none_or(|h| lo.as_slice() <= h) => {
                    if last_hi.is_some() && hi.as_ref().is_none_or(|h| Some(h) > last_hi.as_ref()) {
                        *last_hi = hi;
                    }
                }
                _ => merged.push((lo, hi)),
            }
        }
        deletes.retain(|k| !merged.iter().any(|(lo, hi)| inside(k, lo, hi)));
        let mut ops = Vec::new();
        for (lo, hi) in &merged {
            // The keys put after the range was deleted split it.
            let mut from = lo.clone();
            let within: Vec<&[u8]> = puts.keys().copied().filter(|k| inside(k, lo, hi)).collect();
            for k in within {
                if from.as_slice() < k {
                    ops.push(json!({"requestDeleteRange": {
                        "key": b64(&concat(&self.data, &from)), "range_end": b64(&concat(&self.data, k))}}));
                }
                from = concat(k, &[0]);
            }
            if hi.as_ref().is_none_or(|h| from < *h) {
                ops.push(json!({"requestDeleteRange": {
                    "key": b64(&concat(&self.data, &from)), "range_end": b64(&self.data_end(hi.as_deref()))}}));
            }
        }
        for k in deletes {
            ops.push(json!({"requestDeleteRange": {"key": b64(&concat(&self.data, k))}}));
        }
        for (k, v) in puts {
            ops.push(json!({"requestPut": {"key": b64(&concat(&self.data, k)), "value": b64(v)}}));
        }
        ops
    }

    /// Commits `ops` if the store is at `revision`; `Ok(None)` when it is
    /// not (then at the returned revision: `Err` carries it as `Some`).
    fn txn(&self, ops: &[Value], revision: u64) -> Result<std::result::Result<u64, u64>> {
        let compare = if revision == 0 {
            json!({"key": b64(&self.rev_key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"})
        } else {
            json!({"key": b64(&self.rev_key), "target": "VALUE", "result": "EQUAL",
                   "value": b64(&revision.to_be_bytes())})
        };
        let next = revision + 1;
        let mut success = ops.to_vec();
        success.push(json!({"requestPut": {"key": b64(&self.rev_key), "value": b64(&next.to_be_bytes())}}));
        let body = json!({
            "compare": [compare],
            "success": success,
            "failure": [{"requestRange": {"key": b64(&self.rev_key)}}],
        });
        let reply = self.call("commit", "kv/txn", &body)?;
        if reply.get("succeeded").and_then(Value::as_bool) == Some(true) {
            return Ok(Ok(next));
        }
        let found = reply
            .pointer("/responses/0/response_range/kvs/0")
            .map(|kv| field_bytes(kv, "value").and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes)))
            .unwrap_or(Some(0))
            .ok_or_else(|| self.damaged("commit"))?;
        Ok(Err(found))
    }
}

/// A read view at one etcd revision.
struct EtcdSnapshot<'a> {
    backend: &'a EtcdBackend,
    /// The etcd revision every read is made at.
    at: i64,
    revision: u64,
}

impl Snapshot for EtcdSnapshot<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let b = self.backend;
        let reply =
            b.read("read", "kv/range", &json!({"key": b64(&concat(&b.data, key)), "revision": self.at.to_string()}))?;
        match reply.get("kvs").and_then(Value::as_array).and_then(|a| a.first()) {
            None => Ok(None),
            Some(kv) => field_bytes(kv, "value").map(Some).ok_or_else(|| b.damaged("read")),
        }
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        if end.is_some_and(|end| end <= start) {
            return Ok(());
        }
        let b = self.backend;
        let (mut low, mut high) = (concat(&b.data, start), b.data_end(end));
        let mut limit = FIRST_PAGE;
        loop {
            let mut body = json!({
                "key": b64(&low), "range_end": b64(&high), "limit": limit.to_string(),
                "revision": self.at.to_string(),
            });
            if reverse {
                body["sort_order"] = json!("DESCEND");
                body["sort_target"] = json!("KEY");
            }
            let reply = b.read("scan", "kv/range", &body)?;
            let kvs = reply.get("kvs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let mut last = None;
            for kv in kvs {
                let k = field_bytes(kv, "key").ok_or_else(|| b.damaged("scan"))?;
                let v = field_bytes(kv, "value").ok_or_else(|| b.damaged("scan"))?;
                let Some(key) = k.strip_prefix(b.data.as_slice()) else { return Err(b.damaged("scan")) };
                if !visit(key, &v)? {
                    return Ok(());
                }
                last = Some(k);
            }
            let more = reply.get("more").and_then(Value::as_bool) == Some(true);
            let Some(last) = last.filter(|_| more) else { return Ok(()) };
            if reverse {
                high = last;
            } else {
                low = concat(&last, &[0]);
            }
            limit = (limit * 4).min(MAX_PAGE);
        }
    }
}

impl Backend for EtcdBackend {
    fn kind(&self) -> &'static str {
        "etcd"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let (revision, at) = self.current()?;
        Ok(Box::new(EtcdSnapshot { backend: self, at, revision }))
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        let ops = self.txn_ops(batch);
        if let Some(expect) = batch.expect_revision {
            return match self.txn(&ops, expect)? {
                Ok(next) => Ok(next),
                Err(found) => Err(StoreError::stale_batch(expect, found)),
            };
        }
        let mut revision = self.current()?.0;
        for _ in 0..UNCONDITIONAL_ATTEMPTS {
            match self.txn(&ops, revision)? {
                Ok(next) => return Ok(next),
                Err(found) => revision = found,
            }
        }
        Err(StoreError::new(ErrorKind::Conflict, format!("{}: other writers kept committing first", self.place)))
    }

    fn announces(&self) -> bool {
        true
    }

    /// A watch of the revision key (`/v3/watch`, a stream of JSON objects) on
    /// a connection of its own, read by a thread that hands the revisions on
    /// and watches again from where it was when a read times out.
    fn announcements(&self) -> Result<Box<dyn Announcements>> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Heard>(1024);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        let agent = ureq::AgentBuilder::new().timeout_connect(CONNECT_TIMEOUT).timeout_read(WATCH_READ).build();
        let (url, key, place) = (format!("{}/watch", self.base), b64(&self.rev_key), self.place.clone());
        std::thread::Builder::new()
            .name("canopy-etcd-watch".into())
            .spawn(move || {
                let mut from: Option<i64> = None;
                let mut ready = Some(ready_tx);
                loop {
                    let mut create = json!({"key": key});
                    if let Some(r) = from {
                        create["start_revision"] = json!((r + 1).to_string());
                    }
                    let reply = agent
                        .post(&url)
                        .set("Content-Type", "application/json")
                        .send_string(&json!({ "create_request": create }).to_string());
                    let resp = match reply {
                        Ok(r) => r,
                        Err(e) => {
                            let e = StoreError::new(ErrorKind::Unavailable, format!("{place}: watch: {e}"));
                            match ready.take() {
                                Some(r) => drop(r.send(Err(e))),
                                None => drop(tx.try_send(Heard::Broken(e))),
                            }
                            return;
                        }
                    };
                    let values = serde_json::Deserializer::from_reader(resp.into_reader()).into_iter::<Value>();
                    for v in values {
                        let Ok(v) = v else { break };
                        let result = &v["result"];
                        if let Some(r) = result["header"]["revision"].as_str().and_then(|r| r.parse().ok()) {
                            from = Some(from.map_or(r, |f: i64| f.max(r)));
                        }
                        if result["created"].as_bool() == Some(true) {
                            if let Some(r) = ready.take() {
                                let _ = r.send(Ok(()));
                            }
                        }
                        for ev in result["events"].as_array().into_iter().flatten() {
                            let revision = ev["kv"]["value"]
                                .as_str()
                                .and_then(|s| B64.decode(s).ok())
                                .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
                                .map_or(u64::MAX, u64::from_be_bytes);
                            if let Err(std::sync::mpsc::TrySendError::Disconnected(_)) =
                                tx.try_send(Heard::Commit(revision))
                            {
                                return;
                            }
                        }
                    }
                    // A read timed out, or the stream ended: watch again, unless
                    // nobody listens any more.
                    if let Err(std::sync::mpsc::TrySendError::Disconnected(_)) = tx.try_send(Heard::Tick) {
                        return;
                    }
                }
            })
            .map_err(|e| StoreError::io(format!("{}: watch", self.place), e))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Box::new(ChannelAnnouncements::new(rx))),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::new(ErrorKind::Unavailable, format!("{}: the watch ended", self.place))),
        }
    }

    fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    fn leases(&self) -> bool {
        true
    }

    /// An etcd lease kept alive by a thread (see the `lease` module).
    fn lease(&self) -> Result<Box<dyn canopy_store::lease::Lease>> {
        self.take_lease()
    }

    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        self.held_leases(ids)
    }

    fn approx_len(&self) -> Result<Option<u64>> {
        let body = json!({"key": b64(&self.data), "range_end": b64(&self.data_end(None)), "count_only": true});
        let reply = self.call("count", "kv/range", &body)?;
        Ok(field_i64(&reply, "count").map(|n| n.max(0) as u64))
    }

    /// The size of the server's database file (every store of the server).
    fn disk_size(&self) -> Result<u64> {
        let reply = self.call("size", "maintenance/status", &json!({}))?;
        Ok(field_i64(&reply, "dbSize").unwrap_or(0).max(0) as u64)
    }

    /// Defragments the server's database, returning the space its
    /// compacted history left. canopy never compacts the history itself:
    /// other stores and processes read their snapshots from it; the server's
    /// `--auto-compaction-retention` does.
    fn compact(&self) -> Result<()> {
        self.call("compact", "maintenance/defragment", &json!({})).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend() -> EtcdBackend {
        EtcdBackend {
            agent: ureq::AgentBuilder::new().build(),
            base: String::new(),
            place: String::new(),
            data: b"p/d/".to_vec(),
            rev_key: b"p/rev".to_vec(),
            prefix: "p".into(),
            lease_time: canopy_store::lease::DEFAULT_LEASE,
            sync: SyncMode::Commit,
        }
    }

    fn decoded(ops: &[Value]) -> Vec<String> {
        let s = |v: &Value| String::from_utf8(B64.decode(v.as_str().unwrap()).unwrap()).unwrap();
        ops.iter()
            .map(|op| match (op.get("requestPut"), op.get("requestDeleteRange")) {
                (Some(p), _) => format!("put {}={}", s(&p["key"]), s(&p["value"])),
                (_, Some(d)) if d.get("range_end").is_some() => {
                    format!("del [{}, {})", s(&d["key"]), s(&d["range_end"]))
                }
                (_, Some(d)) => format!("del {}", s(&d["key"])),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn limits_name_the_server_flag() {
        let b = backend();
        let e = b.server_error("commit", 400, "etcdserver: too many operations in txn request");
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("--max-txn-ops"), "{e}");
        let e = b.server_error("commit", 400, "etcdserver: request is too large");
        assert!(e.to_string().contains("--max-request-bytes"), "{e}");
        let e = b.server_error("commit", 400, "etcdserver: mvcc: database space exceeded");
        assert_eq!(e.kind(), ErrorKind::NoSpace);
    }

    #[test]
    fn batches_reduce_to_their_effect() {
        let b = backend();
        let mut batch = Batch::default();
        batch.put(b"a".to_vec(), b"1".to_vec());
        batch.put(b"a".to_vec(), b"2".to_vec());
        batch.delete(b"b".to_vec());
        batch.put(b"b".to_vec(), b"3".to_vec());
        batch.put(b"cx".to_vec(), b"4".to_vec());
        batch.delete(b"z".to_vec());
        batch.delete_prefix(b"c".to_vec());
        batch.put(b"cy".to_vec(), b"5".to_vec());
        batch.delete_prefix(b"cz".to_vec());
        batch.put(b"e".to_vec(), b"6".to_vec());
        batch.delete(b"e".to_vec());
        assert_eq!(
            decoded(&b.txn_ops(&batch)),
            [
                "del [p/d/c, p/d/cy)",
                "del [p/d/cy\0, p/d/d)",
                "del p/d/e",
                "del p/d/z",
                "put p/d/a=2",
                "put p/d/b=3",
                "put p/d/cy=5"
            ]
        );
        let mut all = Batch::default();
        all.put(b"k".to_vec(), b"1".to_vec());
        all.delete_prefix(Vec::new());
        all.put(b"m".to_vec(), b"2".to_vec());
        assert_eq!(decoded(&b.txn_ops(&all)), ["del [p/d/, p/d/m)", "del [p/d/m\0, p/d0)", "put p/d/m=2"]);
    }
}
