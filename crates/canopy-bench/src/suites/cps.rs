//! `cps` (seed 003, ONAP CPS): N optical devices of 86 fragments each under
//! `/openroadm:openroadm-devices/openroadm-device[device-id]`. Get one device
//! with all its descendants (100 per run), get the whole tree, and 1..16
//! concurrent readers each doing sequential gets (throughput, p50/p99
//! latency). In-process; `--mode http` runs the same devices through the CPS
//! REST API of `canopy serve` (`cps_http`).
//!
//! One device (see [`device`]): the entry (1), `info` (1) with `geoLocation`
//! (1), 3 `shelves` (3), 8 `circuit-packs` (8) of 6 `ports` each (48),
//! 20 `interface` entries (20), `protocols` (1) with `lldp` (1) and 2
//! `physical-links` (2): 86 fragments, 895 leaves, about 27 KB of RFC 7951
//! JSON.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use canopy::{Container, Edit, Insert, List, ListInfo, Node, ReadOptions, Store};

use super::{container, fragment_key, num, s, Rng};
use crate::report::{Cell, Row, Table};
use crate::runner::Cx;
use crate::timing::Sample;

const ROOT: &str = "/openroadm:openroadm-devices";

/// The lists of a device, with their keys.
pub const LISTS: [(&str, &str); 6] = [
    ("/openroadm:openroadm-devices/openroadm-device", "device-id"),
    ("/openroadm:openroadm-devices/openroadm-device/shelves", "shelf-name"),
    ("/openroadm:openroadm-devices/openroadm-device/circuit-packs", "circuit-pack-name"),
    ("/openroadm:openroadm-devices/openroadm-device/circuit-packs/ports", "port-name"),
    ("/openroadm:openroadm-devices/openroadm-device/interface", "name"),
    ("/openroadm:openroadm-devices/openroadm-device/physical-links", "physical-link-name"),
];

/// Device `i`'s id, in the seed's style (`C201-7-13A-5A1`).
pub fn device_id(i: usize) -> String {
    format!("C{}-{}-{}A-{}A1", 200 + i / 1000, (i / 100) % 10, (i / 10) % 10, i % 10)
}

fn list_of(key: &str, entries: Vec<Container>) -> Node {
    let mut l = List::new(ListInfo::keyed([key]));
    for e in entries {
        l.insert(e, &Insert::Last).expect("keyed entry");
    }
    Node::List(Box::new(l))
}

fn equipment(rng: &mut Rng, leaves: &mut Vec<(&'static str, canopy::Value)>) {
    leaves.extend([
        ("administrative-state", s(if rng.below(10) == 0 { "outOfService" } else { "inService" })),
        ("operational-state", s("inService")),
        ("equipment-state", s("reserved-for-facility-available")),
        ("vendor", s("vendorA")),
        ("model", s(format!("model-{}", rng.below(40)))),
        ("serial-id", s(format!("SN{:010}", rng.next_u64() % 10_000_000_000))),
        ("type", s("optical")),
        ("product-code", s(format!("PC-{:05}", rng.below(100_000)))),
        (
            "manufacture-date",
            s(format!("20{:02}-{:02}-{:02}T00:00:00Z", 10 + rng.below(12), 1 + rng.below(12), 1 + rng.below(28))),
        ),
        ("clei", s(format!("CLEI{:06}", rng.below(1_000_000)))),
        ("hardware-version", s(format!("{}.{}", 1 + rng.below(5), rng.below(10)))),
        ("due-date", s("2030-01-01T00:00:00Z")),
    ]);
}

/// Device `i` as a list entry.
pub fn device(i: usize) -> Container {
    let mut rng = Rng::new(i as u64 + 11);
    let id = device_id(i);
    let mut info = container(&[
        ("node-id", s(id.clone())),
        ("node-number", num(i)),
        ("node-type", s(if i.is_multiple_of(3) { "xpdr" } else { "rdm" })),
        ("clli", s(format!("NYCMNY{:02}", i % 100))),
        ("vendor", s("vendorA")),
        ("model", s("2DEG-ROADM")),
        ("serial-id", s(format!("SN{i:08}"))),
        ("ipAddress", s(format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255))),
        ("prefix-length", num(24)),
        ("defaultGateway", s(format!("10.{}.{}.1", (i >> 16) & 255, (i >> 8) & 255))),
        ("source", s("static")),
        ("current-ipAddress", s(format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255))),
        ("macAddress", s(format!("00:1b:44:{:02x}:{:02x}:{:02x}", (i >> 16) & 255, (i >> 8) & 255, i & 255))),
        ("softwareVersion", s("7.1.2")),
        ("openroadm-version", s("7.1")),
        ("template", s("roadm-template-2deg")),
        ("current-datetime", s("2023-01-15T10:00:00Z")),
        ("max-degrees", num(2)),
        ("max-srgs", num(4)),
    ]);
    info.children.insert(
        "geoLocation".into(),
        Node::Container(container(&[
            ("latitude", num(format!("{:.6}", 40.0 + rng.unit()))),
            ("longitude", num(format!("{:.6}", -74.0 + rng.unit()))),
        ])),
    );
    let shelves = (0..3)
        .map(|k| {
            let mut l = vec![
                ("shelf-name", s(format!("shelf-{k}"))),
                ("shelf-type", s("shelf-type-a")),
                ("rack", s(format!("rack-{}", k / 2))),
                ("shelf-position", s(k.to_string())),
            ];
            equipment(&mut rng, &mut l);
            container(&l)
        })
        .collect();
    let packs = (0..8)
        .map(|k| {
            let mut l = vec![
                ("circuit-pack-name", s(format!("cp-{}-{k}", k / 4))),
                ("circuit-pack-type", s(if k % 2 == 0 { "WSS" } else { "AMP" })),
                ("circuit-pack-product-code", s(format!("CPC-{k:03}"))),
                ("circuit-pack-mode", s("NORMAL")),
                ("shelf", s(format!("shelf-{}", k % 3))),
                ("slot", s(k.to_string())),
                ("subSlot", s("0")),
            ];
            equipment(&mut rng, &mut l);
            let mut c = container(&l);
            let ports = (0..6)
                .map(|p| {
                    container(&[
                        ("port-name", s(format!("{}-port-{p}", if p < 3 { "in" } else { "out" }))),
                        ("port-type", s("port-type-a")),
                        ("port-qual", s("roadm-external")),
                        ("port-wavelength-type", s("wavelength")),
                        ("port-direction", s(if p < 3 { "rx" } else { "tx" })),
                        ("label", s(format!("L{k}.{p}"))),
                        ("circuit-id", s(format!("CKT-{i}-{k}-{p}"))),
                        ("administrative-state", s("inService")),
                        ("operational-state", s("inService")),
                        ("logical-connection-point", s(format!("DEG{}-TTP-TXRX", 1 + k % 2))),
                    ])
                })
                .collect();
            c.children.insert("ports".into(), list_of("port-name", ports));
            c
        })
        .collect();
    let interfaces = (0..20)
        .map(|k| {
            container(&[
                ("name", s(format!("OTS-DEG{}-TTP-TXRX-{k}", 1 + k % 2))),
                ("description", s(format!("interface {k} of {id}"))),
                ("type", s(if k % 2 == 0 { "opticalTransport" } else { "openROADMOpticalMultiplex" })),
                ("administrative-state", s("inService")),
                ("operational-state", s("inService")),
                ("circuit-id", s(format!("CKT-{i}-IF{k}"))),
                ("supporting-interface", s(format!("OTS-DEG{}", 1 + k % 2))),
                ("supporting-circuit-pack-name", s(format!("cp-{}-{}", (k % 8) / 4, k % 8))),
                ("supporting-port", s(format!("out-port-{}", 3 + k % 3))),
            ])
        })
        .collect();
    let links = (0..2)
        .map(|k| {
            container(&[
                ("physical-link-name", s(format!("phys-link-{k}"))),
                ("source-circuit-pack", s(format!("cp-0-{k}"))),
                ("source-port", s("out-port-3")),
                ("destination-circuit-pack", s(format!("cp-1-{k}"))),
                ("destination-port", s("in-port-0")),
            ])
        })
        .collect();
    let mut protocols = Container::default();
    protocols.children.insert(
        "lldp".into(),
        Node::Container(container(&[
            ("adminStatus", s("txandrx")),
            ("msgTxInterval", num(30)),
            ("msgTxHoldMultiplier", num(4)),
        ])),
    );
    let mut d = container(&[("device-id", s(id))]);
    d.children.insert("info".into(), Node::Container(info));
    d.children.insert("shelves".into(), list_of("shelf-name", shelves));
    d.children.insert("circuit-packs".into(), list_of("circuit-pack-name", packs));
    d.children.insert("interface".into(), list_of("name", interfaces));
    d.children.insert("protocols".into(), Node::Container(protocols));
    d.children.insert("physical-links".into(), list_of("physical-link-name", links));
    d
}

/// Writes the RFC 7951 document of `n` devices to `out`, one device at a
/// time (what a CPS client imports).
///
/// # Errors
/// Write errors of `out`.
pub fn write_document<W: std::io::Write>(n: usize, out: W) -> std::io::Result<W> {
    let mut w = canopy_core::json::JsonWriter::new(out, false);
    w.begin_container(ROOT.trim_start_matches('/'))?;
    w.begin_list("openroadm-device")?;
    for i in 0..n {
        w.begin_entry()?;
        canopy_core::json::write_members(&mut w, &device(i), None)?;
        w.end()?;
    }
    w.end()?;
    w.end()?;
    w.finish()
}

fn device_path(i: usize) -> String {
    format!("{ROOT}/openroadm-device[device-id='{}']", device_id(i))
}

fn open(url: &str) -> Result<Store> {
    let store = Store::open(url)?;
    for (list, key) in LISTS {
        store.declare_list(list, ListInfo::keyed([key]))?;
    }
    Ok(store)
}

/// Sequential gets per reader and run, as the seed's threads (10 each).
pub const PER_READER: usize = 10;

/// The reader counts of the concurrency rows.
pub const READERS: [usize; 5] = [1, 2, 4, 8, 16];

/// Runs the rows at `size` devices.
///
/// # Errors
/// Store errors, a device that does not read back whole.
pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let dir = cx.fresh_dir()?;
    let store = open(&cx.url(&dir))?;
    let modes = cx.modes(&store)?;
    cx.progress("create devices", 1, 1)?;
    let t = Instant::now();
    let mut list = List::new(ListInfo::keyed(["device-id"]));
    for i in 0..n {
        list.insert(device(i), &Insert::Last)?;
    }
    let mut root = Container::default();
    root.children.insert("openroadm-device".into(), Node::List(Box::new(list)));
    store.running().apply(&[Edit::merge(ROOT.parse()?, Node::Container(root))])?;
    let create = t.elapsed();
    let fragments = store.info()?.fragments;
    ensure!(fragments >= 86 * n as u64, "{fragments} fragments stored for {n} devices, expected at least {}", 86 * n);
    ensure!(store.running().count(&format!("{ROOT}/openroadm-device"))? == n, "device count");

    // The floor's store: the same fragments, as canopy stores them.
    let raw_dir = cx.fresh_dir()?;
    let mut raw = cx.floor(&raw_dir)?;
    {
        let snap = store.backend().snapshot()?;
        let mut pairs = Vec::new();
        let prefix = canopy_store::keys::data_prefix(canopy::Datastore::Running);
        snap.scan_prefix(&prefix, false, &mut |k, v| {
            pairs.push((k.to_vec(), v.to_vec()));
            Ok(true)
        })?;
        raw.put_all(&pairs)?;
    }
    let mut rows =
        vec![Row::new("create all devices (one transaction; one run)", Cell::Time(Sample { runs: vec![create] }))];

    const ONE: usize = 100;
    let pick = |run: usize| -> Vec<usize> {
        let mut rng = Rng::new(run as u64 + 99);
        (0..ONE).map(|_| rng.below(n as u64) as usize).collect()
    };
    let canopy = cx.measure(
        "get one device",
        |run| Ok(pick(run)),
        |ids| {
            for i in ids {
                let mut out = Vec::with_capacity(32 << 10);
                store.running().get_json(&device_path(i), ReadOptions::default(), false, &mut out)?;
                ensure!(out.len() > 10_000, "device {i}: {} bytes of JSON", out.len());
            }
            Ok(())
        },
    )?;
    let floor = cx.measure(
        "get one device (floor)",
        |run| Ok(pick(run)),
        |ids| {
            for i in ids {
                ensure!(raw.scan_prefix(&fragment_key(&device_path(i)))? > 0, "raw device {i} missing");
            }
            Ok(())
        },
    )?;
    rows.push(
        Row::new("get one device with all descendants (JSON)", Cell::Time(canopy.per_op(ONE)))
            .floor(Cell::Time(floor.per_op(ONE))),
    );

    let json_len = RefCell::new(0usize);
    let canopy = cx.measure(
        "get the whole tree",
        |_| Ok(()),
        |()| {
            let mut out = Vec::new();
            store.running().get_json(ROOT, ReadOptions::default(), false, &mut out)?;
            *json_len.borrow_mut() = out.len();
            Ok(())
        },
    )?;
    let root_prefix = fragment_key(ROOT);
    let floor = cx.measure(
        "get the whole tree (floor)",
        |_| Ok(()),
        |()| {
            ensure!(raw.scan_prefix(&root_prefix)? > 0, "raw scan found nothing");
            Ok(())
        },
    )?;
    rows.push(Row::new("get the whole tree (JSON)", Cell::Time(canopy)).floor(Cell::Time(floor)));
    rows.push(Row::new("size of the whole tree as JSON", Cell::Bytes(*json_len.borrow() as u64)));
    drop(raw);
    rows.extend(process_rows(cx, &cx.url(&dir), n)?);

    // Concurrent readers, each doing sequential gets of random devices.
    for readers in READERS {
        let lat = RefCell::new(Vec::<Duration>::new());
        let rates = RefCell::new(Vec::new());
        cx.measure(
            &format!("{readers} concurrent readers"),
            |_| Ok(()),
            |()| {
                let t = Instant::now();
                let results: Vec<Result<Vec<Duration>>> = std::thread::scope(|sc| {
                    let handles: Vec<_> = (0..readers)
                        .map(|r| {
                            let store = &store;
                            sc.spawn(move || -> Result<Vec<Duration>> {
                                let mut rng = Rng::new(r as u64 * 7919 + 5);
                                let mut own = Vec::with_capacity(PER_READER);
                                for _ in 0..PER_READER {
                                    let i = rng.below(n as u64) as usize;
                                    let t = Instant::now();
                                    let mut out = Vec::with_capacity(32 << 10);
                                    store.running().get_json(
                                        &device_path(i),
                                        ReadOptions::default(),
                                        false,
                                        &mut out,
                                    )?;
                                    own.push(t.elapsed());
                                    ensure!(out.len() > 10_000, "device {i} incomplete");
                                }
                                Ok(own)
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().expect("reader thread")).collect()
                });
                let elapsed = t.elapsed();
                let mut all = Vec::new();
                for r in results {
                    all.extend(r?);
                }
                ensure!(all.len() == readers * PER_READER, "not every get succeeded");
                rates.borrow_mut().push((readers * PER_READER) as f64 / elapsed.as_secs_f64());
                lat.borrow_mut().extend(all);
                Ok(())
            },
        )?;
        // The warm-up run's figures are dropped.
        let mut lat = lat.into_inner();
        lat.drain(..readers * PER_READER);
        let mut rates = rates.into_inner();
        rates.remove(0);
        let s = Sample { runs: lat };
        rows.push(Row::new(format!("{readers} readers: throughput"), Cell::Rate { unit: "gets/s", runs: rates }));
        rows.extend(Row::latencies(&format!("{readers} readers"), &s));
    }
    Ok(Table {
        backend: cx.label(),
        size,
        modes,
        rows,
        checks: vec![format!(
            "checked: {fragments} fragments stored ({n} devices × 86 + the root); every get returned a whole device"
        )],
    })
}

/// The device list, a query with a predicate on a non-key leaf (a third of
/// the devices are `xpdr`), and importing the whole tree, each in a fresh
/// process (`canopy bench __probe`): time from open to done, and the
/// process's peak RSS.
fn process_rows(cx: &Cx, url: &str, n: usize) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    if cx.probe.is_empty() {
        rows.push(Row::new("reads and import in a fresh process", Cell::Missing("no probe command".into())));
        return Ok(rows);
    }
    let reads = [
        ("get the device list (JSON)", format!("{ROOT}/openroadm-device")),
        ("query a non-key leaf (JSON)", format!("{ROOT}/openroadm:openroadm-device[info/node-type='xpdr']")),
    ];
    for (label, query) in reads {
        let got = RefCell::new(Vec::new());
        cx.measure(
            label,
            |_| Ok(()),
            |()| {
                let p = crate::probe::run(&cx.probe, &["get", url, &query])?;
                ensure!(p.bytes > 1000 * n as u64, "{label}: {} bytes of JSON for {n} devices", p.bytes);
                got.borrow_mut().push(p);
                Ok(())
            },
        )?;
        let got = got.into_inner();
        let measured = &got[1..];
        rows.push(Row::new(
            format!("{label}: open to done, in a fresh process"),
            Cell::Time(Sample { runs: measured.iter().map(|p| p.open_to_read).collect() }),
        ));
        rows.push(Row::new(
            format!("{label}: peak RSS of that process"),
            Cell::Bytes(measured.iter().map(|p| p.peak_rss).max().unwrap_or(0)),
        ));
        rows.push(Row::new(
            format!("{label}: of which the store's mapped pages (at exit)"),
            Cell::Bytes(measured.iter().map(|p| p.file_rss).max().unwrap_or(0)),
        ));
        rows.push(Row::new(format!("{label}: size"), Cell::Bytes(measured.last().map_or(0, |p| p.bytes))));
    }
    // Import: one run into a fresh store (it takes a while at 10,000 devices).
    cx.progress("import the whole tree", 1, 1)?;
    let dir = cx.fresh_dir()?;
    let doc = dir.join("devices.json");
    let file = std::io::BufWriter::new(std::fs::File::create(&doc)?);
    write_document(n, file)?.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    let size = std::fs::metadata(&doc)?.len();
    let store_dir = dir.join("store");
    let lists: Vec<String> = LISTS.iter().map(|(l, k)| format!("{l}={k}")).collect();
    let mut args = vec!["import".to_string(), cx.url(&store_dir), doc.display().to_string()];
    args.extend(lists);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let p = crate::probe::run(&cx.probe, &args)?;
    rows.push(Row::new(
        "import the whole tree (one run, in a fresh process)",
        Cell::Time(Sample { runs: vec![p.open_to_read] }),
    ));
    rows.push(Row::new("import the whole tree: peak RSS of that process", Cell::Bytes(p.peak_rss)));
    rows.push(Row::new("import the whole tree: of which mapped pages (at exit)", Cell::Bytes(p.file_rss)));
    rows.push(Row::new("import the whole tree: document size", Cell::Bytes(size)));
    Ok(rows)
}

pub fn notes() -> Vec<String> {
    vec![format!(
        "cps: devices from the generator documented in docs/benchmarks.md (86 fragments, 895 leaves each). \
         \"get one device\" is the mean of 100 gets of random devices per run, each written as RFC 7951 \
         JSON (the seed's REST response); the floor range-scans the device's fragments. Concurrency rows \
         run 1–16 threads on one open store, each doing {PER} sequential gets of random devices; throughput is \
         gets per second of wall time, latency percentiles are over every get of the measured runs. \
         In-process, except the device list, the non-key query and the import, which each run in a fresh \
         process (`canopy bench __probe`) reporting its time from open to done and its peak RSS (VmHWM, \
         which counts the resident pages of the store's memory map too; those are shown apart). \
         `--mode http` runs the same devices through `canopy serve`'s CPS REST API.",
        PER = PER_READER
    )]
}
