//! `canopy serve` under load: the server as a child process on loopback, N
//! list entries in its store, then C concurrent clients (each its own
//! keep-alive HTTP/1.1 connection and thread) each doing 10 sequential
//! RESTCONF GETs of a random entry. ONAP CPS (seed 003) reports 26% success
//! at 1,000 parallel clients; every request here must succeed.
//!
//! The child process, the connection and the concurrent rounds serve the cps
//! suite's HTTP mode too (`cps_http`).

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use canopy::{Container, Edit, Insert, List, ListInfo, Node, Store, Value};

use super::Rng;
use crate::report::{Cell, Row, Table};
use crate::runner::Cx;
use crate::timing::Sample;

/// Sequential gets per client.
pub const PER_CLIENT: usize = 10;
/// The concurrent client counts at the seed's sizes (and the small ones).
pub const CLIENTS: [usize; 4] = [1, 10, 100, 1000];
pub const CLIENTS_SMALL: [usize; 3] = [1, 10, 100];
/// A request that takes longer than this fails (bounded run).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

const ROOT: &str = "/bench:items";

fn item(i: usize) -> Container {
    let mut c = Container::default();
    c.children.insert("id".into(), Node::leaf(Value::String(format!("item-{i}").into())));
    c.children.insert("name".into(), Node::leaf(Value::String(format!("the item number {i}").into())));
    c.children.insert("weight".into(), Node::leaf(Value::Number((i % 977).to_string().into())));
    c.children.insert("enabled".into(), Node::leaf(Value::Bool(!i.is_multiple_of(3))));
    c
}

/// The server child process; killed when dropped.
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `canopy --store URL serve` on a free port of 127.0.0.1 (the
/// binary of the context's probe command).
///
/// # Errors
/// No binary, or the server does not say where it listens.
pub fn start(cx: &Cx, url: &str) -> Result<Server> {
    let Some(bin) = cx.probe.first() else { bail!("no canopy binary to start the server with") };
    let mut child = Command::new(bin)
        .args(["--store", url, "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {} serve", bin.to_string_lossy()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("server stdout")?).read_line(&mut line)?;
    let Some(addr) = line.trim().strip_prefix("listening on http://") else {
        let _ = child.kill();
        bail!("the server did not start: it said {line:?}");
    };
    Ok(Server { addr: addr.to_string(), child })
}

/// One keep-alive HTTP/1.1 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn open(addr: &str) -> Result<Conn> {
        let s = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
        s.set_read_timeout(Some(REQUEST_TIMEOUT))?;
        s.set_nodelay(true)?;
        Ok(Conn { writer: s.try_clone()?, reader: BufReader::new(s) })
    }

    /// GETs `target` as RESTCONF JSON; the status and the body.
    fn get(&mut self, target: &str) -> Result<(u16, Vec<u8>)> {
        self.request("GET", target, &[("Accept", "application/yang-data+json")], &[])
    }

    /// Sends one request (`body` with its length when it is not empty); the
    /// status and the body of the reply.
    ///
    /// # Errors
    /// I/O errors, a reply that is not HTTP/1.1 with a length.
    pub fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: bench\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        self.writer.write_all(head.as_bytes())?;
        self.writer.write_all(body)?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).context("status line")?;
        let mut len = 0usize;
        let mut chunked = false;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse()?;
                }
                if k.eq_ignore_ascii_case("transfer-encoding") && v.trim().eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        if chunked {
            return Ok((status, self.chunks()?));
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body)?;
        Ok((status, body))
    }

    /// A chunked body (RFC 9112 section 7.1): chunks of a hexadecimal size
    /// until the empty one, then trailers until an empty line.
    fn chunks(&mut self) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let size = line.trim_end().split(';').next().unwrap_or("");
            let n = usize::from_str_radix(size.trim(), 16).with_context(|| format!("chunk size {line:?}"))?;
            if n == 0 {
                break;
            }
            let at = body.len();
            body.resize(at + n, 0);
            self.reader.read_exact(&mut body[at..])?;
            line.clear();
            self.reader.read_line(&mut line)?;
        }
        loop {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                return Ok(body);
            }
        }
    }
}

fn target(i: usize) -> String {
    format!("/restconf/data/bench:items/item=item-{i}")
}

/// What one round of `clients` clients saw.
struct Round {
    ok: usize,
    latencies: Vec<Duration>,
    elapsed: Duration,
}

/// What one client does once: a request and whether its reply was right.
pub type Get = dyn Fn(&mut Conn, &mut Rng) -> bool + Sync;

fn round(addr: &str, clients: usize, seed: u64, get: &Get) -> Round {
    let t = Instant::now();
    let results: Vec<(usize, Vec<Duration>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                std::thread::Builder::new().stack_size(256 << 10).spawn_scoped(sc, move || {
                    let mut rng = Rng::new(seed * 100_003 + c as u64);
                    let mut lat = Vec::with_capacity(PER_CLIENT);
                    let mut ok = 0;
                    let Ok(mut conn) = Conn::open(addr) else { return (0, lat) };
                    for _ in 0..PER_CLIENT {
                        let t = Instant::now();
                        // A failed request leaves the connection unusable.
                        if !get(&mut conn, &mut rng) {
                            break;
                        }
                        lat.push(t.elapsed());
                        ok += 1;
                    }
                    (ok, lat)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.map_or((0, Vec::new()), |h| h.join().unwrap_or((0, Vec::new())))).collect()
    });
    let elapsed = t.elapsed();
    let mut out = Round { ok: 0, latencies: Vec::new(), elapsed };
    for (ok, lat) in results {
        out.ok += ok;
        out.latencies.extend(lat);
    }
    out
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let dir = cx.fresh_dir()?;
    let url = cx.url(&dir);
    let modes = {
        let store = Store::open(&url)?;
        cx.progress("create items", 1, 1)?;
        let mut list = List::new(ListInfo::keyed(["id"]));
        for i in 0..n {
            list.insert(item(i), &Insert::Last)?;
        }
        let mut root = Container::default();
        root.children.insert("item".into(), Node::List(Box::new(list)));
        store.running().apply(&[Edit::merge(ROOT.parse()?, Node::Container(root))])?;
        ensure!(store.running().count(&format!("{ROOT}/item"))? == n, "item count");
        cx.modes(&store)?
    };
    let server = start(cx, &url)?;
    let addr = server.addr.clone();
    let mut rows = Vec::new();

    // One client, one request at a time: the latency of a single GET.
    let single = RefCell::new(Vec::new());
    cx.measure(
        "GET one entry, one client",
        |_| Conn::open(&addr),
        |mut conn| {
            let mut rng = Rng::new(7);
            for _ in 0..100 {
                let i = rng.below(n as u64) as usize;
                let t = Instant::now();
                let (status, body) = conn.get(&target(i))?;
                single.borrow_mut().push(t.elapsed());
                ensure!(status == 200 && contains(&body, format!("\"item-{i}\"").as_bytes()), "GET item {i}: {status}");
            }
            Ok(())
        },
    )?;
    let mut single = single.into_inner();
    single.drain(..100.min(single.len()));
    let s = Sample { runs: single };
    rows.extend(Row::latencies("GET one entry, one client", &s));

    let counts: &[usize] = if size < 1000 { &CLIENTS_SMALL } else { &CLIENTS };
    let get = move |conn: &mut Conn, rng: &mut Rng| {
        let i = rng.below(n as u64) as usize;
        matches!(conn.get(&target(i)), Ok((200, body)) if contains(&body, format!("\"item-{i}\"").as_bytes()))
    };
    let checks = concurrent_rows(cx, &addr, counts, &get, &mut rows)?;
    drop(server);
    Ok(Table { backend: cx.label(), size, modes: format!("{modes}; HTTP/1.1 keep-alive on loopback"), rows, checks })
}

/// The rows of `counts` concurrent clients, each doing [`PER_CLIENT`]
/// sequential `get`s on its own connection: success, throughput and latency
/// percentiles of each count, appended to `rows`; a check line per count.
///
/// # Errors
/// [`crate::runner::Interrupted`].
pub fn concurrent_rows(cx: &Cx, addr: &str, counts: &[usize], get: &Get, rows: &mut Vec<Row>) -> Result<Vec<String>> {
    let mut checks = Vec::new();
    for &clients in counts {
        let lat = RefCell::new(Vec::new());
        let rates = RefCell::new(Vec::new());
        let oks = RefCell::new(Vec::new());
        let mut seed = 0;
        cx.measure(
            &format!("{clients} concurrent clients"),
            |_| Ok(()),
            |()| {
                seed += 1;
                let r = round(addr, clients, seed, get);
                oks.borrow_mut().push(100.0 * r.ok as f64 / (clients * PER_CLIENT) as f64);
                rates.borrow_mut().push(r.ok as f64 / r.elapsed.as_secs_f64());
                lat.borrow_mut().push(r.latencies);
                Ok(())
            },
        )?;
        // The warm-up run's figures are dropped.
        let (mut lat, mut rates, mut oks) = (lat.into_inner(), rates.into_inner(), oks.into_inner());
        lat.remove(0);
        rates.remove(0);
        oks.remove(0);
        let all = Sample { runs: lat.into_iter().flatten().collect() };
        let worst = oks.iter().copied().fold(100.0, f64::min);
        checks.push(format!("{clients} clients: {worst:.1}% of the gets succeeded in the worst run"));
        rows.push(Row::new(format!("{clients} clients: success"), Cell::Rate { unit: "% ok", runs: oks }));
        rows.push(Row::new(format!("{clients} clients: throughput"), Cell::Rate { unit: "gets/s", runs: rates }));
        rows.extend(Row::latencies(&format!("{clients} clients"), &all));
    }
    Ok(checks)
}

pub fn notes() -> Vec<String> {
    vec![format!(
        "server: `canopy serve` started as a child process on 127.0.0.1 over a store of N entries of \
         /bench:items/item (4 leaves each). Each client is a thread with its own keep-alive HTTP/1.1 \
         connection doing {PER_CLIENT} sequential RESTCONF GETs of random entries; a get succeeds when it \
         answers 200 with the entry. Success is the share of gets that succeeded, throughput counts them \
         per second of wall time, latency percentiles are over every successful get of the measured runs. \
         ONAP CPS (seed 003) reports 26% success with 1,000 parallel clients."
    )]
}
