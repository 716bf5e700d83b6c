//! The cost of streaming a whole stored tree as RFC 7951 JSON: the `cps`
//! suite's "get the whole tree" row on the library directly (LMDB,
//! `sync=off`, cache off), for profiling the streamer.
//!
//! `cargo run --release -p canopy-bench --example whole_tree -- [DEVICES] [RUNS]`

use std::time::Instant;

use canopy::{Container, Edit, Insert, List, ListInfo, Node, ReadOptions, Store};
use canopy_bench::suites::cps::{device, LISTS};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let store = Store::open(&format!("lmdb:{}?sync=off", dir.path().display()))?;
    for (list, key) in LISTS {
        store.declare_list(list, ListInfo::keyed([key]))?;
    }
    let mut list = List::new(ListInfo::keyed(["device-id"]));
    for i in 0..n {
        list.insert(device(i), &Insert::Last)?;
    }
    let mut root = Container::default();
    root.children.insert("openroadm-device".into(), Node::List(Box::new(list)));
    store.running().apply(&[Edit::merge("/openroadm:openroadm-devices".parse()?, Node::Container(root))])?;
    for run in 0..runs {
        let t = Instant::now();
        let mut out = Vec::new();
        store.running().get_json("/openroadm:openroadm-devices", ReadOptions::default(), false, &mut out)?;
        let d = t.elapsed();
        println!(
            "run {run}: {n} devices, {:.1} MB of JSON in {:.1} ms ({:.0} MB/s)",
            out.len() as f64 / 1e6,
            d.as_secs_f64() * 1e3,
            out.len() as f64 / 1e6 / d.as_secs_f64()
        );
    }
    Ok(())
}
