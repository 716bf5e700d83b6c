//! `cps --mode http`: the cps suite's devices through the CPS REST API
//! (`/cps/api`) of `canopy serve`, started as a child process on loopback,
//! as a CPS client sends them: create a dataspace, upload the schema set
//! (a `.yang` file), create an anchor, POST the devices as JSON, then GET a
//! node with its descendants, GET `nodes/query` with a CPS path, PATCH
//! leaves, DELETE nodes, and concurrent clients doing sequential gets. The
//! server validates every write against the schema set and commits it at the
//! store's sync mode; nothing is shortened for the benchmark.
//!
//! The YANG module is derived from the generator's device (every leaf of
//! [`cps::device`] with its type), so the two cannot drift apart.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{ensure, Result};
use canopy::{Container, Node, Store, Value};
use serde_json::{Map, Value as Json};

use super::server::{self, contains, Conn, CLIENTS, CLIENTS_SMALL, PER_CLIENT};
use super::{cps, Rng};
use crate::report::{Cell, Row, Table};
use crate::runner::Cx;
use crate::timing::Sample;

const DATASPACE: &str = "bench";
const SCHEMA_SET: &str = "openroadm";
const ANCHOR: &str = "devices";
const MODULE: &str = "openroadm";
/// Devices per POST when writing the store (the server takes bodies up to
/// 256 MB; a device is about 27 KB).
pub const PER_POST: usize = 1000;
/// Requests per run of the one-device rows (the seed's 100).
const ONE: usize = 100;
/// Measured runs of the whole-tree row.
const WHOLE_RUNS: usize = 10;

/// The YANG module of the generator's devices: the containers and keyed
/// lists of [`cps::device`], its string leaves as `string`, integers as
/// `uint32`, decimals as `decimal64` with 6 fraction digits.
pub fn yang() -> String {
    let mut y = format!(
        "module {MODULE} {{\n  yang-version 1.1;\n  namespace \"urn:canopy:bench:openroadm\";\n  prefix {MODULE};\n  \
         revision 2024-01-01;\n  container openroadm-devices {{\n    list openroadm-device {{\n      key \
         \"device-id\";\n"
    );
    body(&cps::device(0), 6, &mut y);
    y.push_str("    }\n  }\n}\n");
    y
}

fn body(c: &Container, indent: usize, y: &mut String) {
    let pad = " ".repeat(indent);
    for (name, node) in c.children.iter() {
        match node {
            Node::Leaf { value, .. } => {
                let ty = match value {
                    Value::Number(n) if n.contains('.') => "decimal64 { fraction-digits 6; }",
                    Value::Number(_) => "uint32;",
                    Value::Bool(_) => "boolean;",
                    _ => "string;",
                };
                let _ = writeln!(y, "{pad}leaf {name} {{ type {ty} }}");
            }
            Node::Container(inner) => {
                let _ = writeln!(y, "{pad}container {name} {{");
                body(inner, indent + 2, y);
                let _ = writeln!(y, "{pad}}}");
            }
            Node::List(l) => {
                let _ = writeln!(y, "{pad}list {name} {{\n{pad}  key \"{}\";", l.info.keys.join(" "));
                if let Some(first) = l.entries().next() {
                    body(first, indent + 2, y);
                }
                let _ = writeln!(y, "{pad}}}");
            }
            _ => {}
        }
    }
}

/// A container's children as a JSON object (numbers as JSON numbers, as CPS
/// clients send them).
fn json_of(c: &Container) -> Json {
    let mut m = Map::new();
    for (name, node) in c.children.iter() {
        let v = match node {
            Node::Leaf { value: Value::String(s), .. } => Json::String(s.to_string()),
            Node::Leaf { value: Value::Number(n), .. } => {
                serde_json::from_str(n).unwrap_or(Json::String(n.to_string()))
            }
            Node::Leaf { value: Value::Bool(b), .. } => Json::Bool(*b),
            Node::Container(inner) => json_of(inner),
            Node::List(l) => Json::Array(l.entries().map(json_of).collect()),
            _ => continue,
        };
        m.insert(name.to_string(), v);
    }
    Json::Object(m)
}

/// The target and body of the POST that creates devices `ids`: under `/` with
/// their container when it is the first (`root`), else under `/openroadm-devices`.
fn devices_post(ids: impl Iterator<Item = usize>, root: bool) -> (String, Vec<u8>) {
    let list: Vec<Json> = ids.map(|i| json_of(&cps::device(i))).collect();
    let devices = serde_json::json!({ "openroadm-device": list });
    let (xpath, body) = match root {
        true => ("/", serde_json::json!({ "openroadm-devices": devices })),
        false => ("/openroadm-devices", devices),
    };
    (format!("{}?xpath={}", anchor_url("nodes"), enc(xpath)), serde_json::to_vec(&body).expect("JSON"))
}

/// Percent-encodes a query parameter's value.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn anchor_url(what: &str) -> String {
    format!("/cps/api/v2/dataspaces/{DATASPACE}/anchors/{ANCHOR}/{what}")
}

fn device_xpath(i: usize) -> String {
    format!("/openroadm-devices/openroadm-device[@device-id='{}']", cps::device_id(i))
}

fn node_target(xpath: &str) -> String {
    format!("{}?xpath={}&descendants=all", anchor_url("node"), enc(xpath))
}

fn query_target(i: usize) -> String {
    let q = format!("//openroadm-device[@device-id='{}']", cps::device_id(i));
    format!("{}?cps-path={}&descendants=all", anchor_url("nodes/query"), enc(&q))
}

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

/// Sends a request and checks its status.
fn call(
    conn: &mut Conn,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    want: u16,
) -> Result<Vec<u8>> {
    let (status, reply) = conn.request(method, target, headers, body)?;
    ensure!(status == want, "{method} {target}: {status}, expected {want}: {}", String::from_utf8_lossy(&reply));
    Ok(reply)
}

/// GETs device `i` with its descendants; whether it came back whole.
fn get_device(conn: &mut Conn, i: usize) -> Result<usize> {
    let reply = call(conn, "GET", &node_target(&device_xpath(i)), &[], &[], 200)?;
    ensure!(
        reply.len() > 10_000 && contains(&reply, cps::device_id(i).as_bytes()),
        "device {i}: {} bytes",
        reply.len()
    );
    Ok(reply.len())
}

/// Creates the dataspace, the schema set and the anchor, as a CPS client does.
fn setup(conn: &mut Conn) -> Result<()> {
    call(conn, "POST", &format!("/cps/api/v2/dataspaces?dataspace-name={DATASPACE}"), &[], &[], 201)?;
    let boundary = "canopy-bench-boundary";
    let mut form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{MODULE}.yang\"\r\nContent-Type: \
         application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    form.extend(yang().into_bytes());
    form.extend(format!("\r\n--{boundary}--\r\n").into_bytes());
    let ct = format!("multipart/form-data; boundary={boundary}");
    call(
        conn,
        "POST",
        &format!("/cps/api/v2/dataspaces/{DATASPACE}/schema-sets?schema-set-name={SCHEMA_SET}"),
        &[("Content-Type", &ct)],
        &form,
        201,
    )?;
    call(
        conn,
        "POST",
        &format!("/cps/api/v2/dataspaces/{DATASPACE}/anchors?schema-set-name={SCHEMA_SET}&anchor-name={ANCHOR}"),
        &[],
        &[],
        201,
    )?;
    Ok(())
}

/// Runs the HTTP rows at `size` devices.
///
/// # Errors
/// The server does not start, a request fails or answers otherwise than CPS
/// would.
pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let dir = cx.fresh_dir()?;
    let url = cx.url(&dir);
    // The sync mode as the server's store reports it (it is opened the same
    // way); the anchors share its backend and have no cache of their own.
    let sync = crate::runner::sync_of(&Store::open(&url)?);
    let modes = format!("{sync}, cache=off (CPS anchors are opened without a cache)");
    let server = server::start(cx, &url)?;
    let addr = server.addr.clone();
    let mut conn = Conn::open(&addr)?;
    setup(&mut conn)?;
    let mut rows = Vec::new();

    // Write the N devices, PER_POST per request (the body built before the clock starts).
    cx.progress("write devices", 1, 1)?;
    let mut posts = Vec::new();
    let mut total = std::time::Duration::ZERO;
    for start in (0..n).step_by(PER_POST) {
        let ids = start..(start + PER_POST).min(n);
        let (target, body) = devices_post(ids.clone(), start == 0);
        let t = Instant::now();
        call(&mut conn, "POST", &target, &JSON, &body, 201)?;
        let d = t.elapsed();
        total += d;
        if ids.len() == PER_POST.min(n) {
            posts.push(d);
        }
    }
    rows.push(Row::new(
        format!("write all devices (POSTs of {} devices; one run)", PER_POST.min(n)),
        Cell::Time(Sample { runs: vec![total] }),
    ));
    rows.push(Row::new(format!("write {} devices (one POST)", PER_POST.min(n)), Cell::Time(Sample { runs: posts })));

    let pick = |run: usize| -> Vec<usize> {
        let mut rng = Rng::new(run as u64 + 99);
        (0..ONE).map(|_| rng.below(n as u64) as usize).collect()
    };

    // One device with all its descendants, and the same by a `//` CPS path.
    for (row, by_query) in
        [("get one device with all descendants (JSON)", false), ("CPS path query of one device", true)]
    {
        let lat = RefCell::new(Vec::new());
        let s = cx.measure(
            row,
            |run| Ok(pick(run)),
            |ids| {
                for i in ids {
                    let t = Instant::now();
                    if by_query {
                        let reply = call(&mut conn, "GET", &query_target(i), &[], &[], 200)?;
                        ensure!(reply.len() > 10_000 && contains(&reply, cps::device_id(i).as_bytes()), "query {i}");
                    } else {
                        get_device(&mut conn, i)?;
                    }
                    lat.borrow_mut().push(t.elapsed());
                }
                Ok(())
            },
        )?;
        let mut lat = lat.into_inner();
        lat.drain(..ONE.min(lat.len()));
        rows.push(Row::new(row, Cell::Time(s.per_op(ONE))));
        rows.extend(Row::latencies(row, &Sample { runs: lat }));
    }

    let json_len = RefCell::new(0usize);
    let whole = cx.measure_n(
        "get the whole tree",
        WHOLE_RUNS,
        |_| Ok(()),
        |()| {
            let reply = call(&mut conn, "GET", &node_target("/openroadm-devices"), &[], &[], 200)?;
            *json_len.borrow_mut() = reply.len();
            Ok(())
        },
    )?;
    rows.push(Row::new("get the whole tree (JSON)", Cell::Time(whole)));
    rows.push(Row::new("size of the whole tree as JSON", Cell::Bytes(*json_len.borrow() as u64)));

    // Leaves of 100 devices, one PATCH each.
    let version = RefCell::new(0usize);
    let patch = cx.measure(
        "update leaves of 100 devices",
        |run| Ok(pick(run)),
        |ids| {
            let v = {
                let mut v = version.borrow_mut();
                *v += 1;
                *v
            };
            for i in ids {
                let body = format!(
                    r#"{{"info":{{"softwareVersion":"7.1.{v}","current-datetime":"2024-01-{:02}T10:00:00Z"}}}}"#,
                    1 + v % 28
                );
                let target = format!("{}?xpath={}", anchor_url("nodes"), enc(&device_xpath(i)));
                call(&mut conn, "PATCH", &target, &JSON, body.as_bytes(), 200)?;
            }
            Ok(())
        },
    )?;
    rows.push(Row::new("update leaves of one device (PATCH, mean of 100)", Cell::Time(patch.per_op(ONE))));
    let last = version.into_inner();
    let check =
        call(&mut conn, "GET", &node_target(&format!("{}/info", device_xpath(pick(cx.repeat)[0]))), &[], &[], 200)?;
    ensure!(contains(&check, format!("\"7.1.{last}\"").as_bytes()), "the PATCH did not land");

    // Concurrent clients, each with its own connection.
    let counts: &[usize] = if size < 1000 { &CLIENTS_SMALL } else { &CLIENTS };
    let get = move |conn: &mut Conn, rng: &mut Rng| get_device(conn, rng.below(n as u64) as usize).is_ok();
    let mut checks = server::concurrent_rows(cx, &addr, counts, &get, &mut rows)?;

    // 100 distinct devices deleted, one DELETE each; each run's setup puts them back.
    let gone: Vec<usize> = Rng::new(5).permutation(n).into_iter().take(ONE.min(n)).collect();
    // A fresh connection: the server closes one left idle longer than its
    // header timeout (30 s), which the concurrency rows take at 10,000 devices.
    drop(conn);
    let shared = RefCell::new(Conn::open(&addr)?);
    let delete = cx.measure(
        "delete 100 devices",
        |run| {
            if run > 0 {
                let (target, body) = devices_post(gone.iter().copied(), false);
                call(&mut shared.borrow_mut(), "POST", &target, &JSON, &body, 201)?;
            }
            Ok(())
        },
        |()| {
            let mut conn = shared.borrow_mut();
            for &i in &gone {
                let target = format!("{}?xpath={}", anchor_url("nodes"), enc(&device_xpath(i)));
                call(&mut conn, "DELETE", &target, &[], &[], 204)?;
            }
            Ok(())
        },
    )?;
    let mut conn = shared.into_inner();
    rows.push(Row::new(
        format!("delete one device (DELETE, mean of {})", gone.len()),
        Cell::Time(delete.per_op(gone.len())),
    ));
    let (status, _) = conn.request("GET", &node_target(&device_xpath(gone[0])), &[], &[])?;
    ensure!(status == 404, "a deleted device answers {status}");
    checks.insert(
        0,
        format!(
            "checked: every get returned the whole device; the last PATCH reads back; a deleted device is 404; \
             {} bytes of JSON for the whole tree",
            json_len.borrow()
        ),
    );
    drop(conn);
    drop(server);
    Ok(Table {
        backend: cx.label(),
        size,
        modes: format!("{modes}; CPS REST /cps/api over HTTP/1.1 keep-alive on loopback"),
        rows,
        checks,
    })
}

pub fn notes() -> Vec<String> {
    vec![format!(
        "cps over HTTP: `canopy serve` as a child process on 127.0.0.1, driven through its CPS REST API as a CPS \
         client: a dataspace, a schema set uploaded as one .yang file (derived from the generator's device), an \
         anchor, the devices POSTed as JSON under /openroadm-devices, {PER_POST} per request. \"get one device\" \
         is GET v2 .../node?xpath=/openroadm-devices/openroadm-device[@device-id='X']&descendants=all, the CPS \
         path query GET .../nodes/query?cps-path=//openroadm-device[@device-id='X']&descendants=all, each the \
         mean of 100 requests of random devices per run on one keep-alive connection, with the p50/p99 of every \
         request; the whole tree is GET node of /openroadm-devices, mean of {WHOLE_RUNS}; an update is one PATCH \
         of two leaves of a device's info; a delete is one DELETE of a device (each run's setup POSTs them back). \
         Concurrent clients: each a thread with its own connection doing {PER_CLIENT} sequential gets of a random \
         device with its descendants; a get succeeds when it answers 200 with the whole device. Every write is \
         validated against the schema set and committed at the store's sync mode; the anchors are stores of \
         their own over the server's backend without a cache."
    )]
}
