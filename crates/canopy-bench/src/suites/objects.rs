//! `objects` (seed 002, Durus storages): N news items (title, body, author,
//! date, id) in one keyed collection, `/news:db/item[id]`. Bulk create with a
//! commit every 10,000 items (time, peak RSS), compact (time, peak RSS),
//! start-up to the first read in a fresh process before and after compaction,
//! item 123 and 10/100/1000 random items (best of the runs), bytes on disk.

use std::cell::RefCell;
use std::time::Duration;

use anyhow::{ensure, Result};
use canopy::{Container, Edit, List, ListInfo, Node, Store, Subtree};

use super::{container, fragment_key, num, s, Rng};
use crate::probe;
use crate::report::{Cell, Row, Table};
use crate::runner::{dir_bytes, Cx};
use crate::timing::{peak_rss, reset_peak_rss, Sample};

/// Items per commit, as the seed's bulk load.
pub const COMMIT_EVERY: usize = 10_000;

const WORDS: [&str; 24] = [
    "market", "storage", "release", "python", "object", "server", "update", "report", "city", "council", "weather",
    "season", "budget", "school", "energy", "health", "league", "project", "museum", "river", "science", "travel",
    "music", "review",
];

fn words(rng: &mut Rng, n: usize) -> String {
    let mut out = String::with_capacity(n * 8);
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    out
}

/// News item `i`: about 200 bytes of text, the size Durus's 500,000 items
/// in 98–105 MB imply.
pub fn item(i: usize) -> Container {
    let mut rng = Rng::new(i as u64 + 7);
    let date = format!(
        "2007-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        1 + rng.below(12),
        1 + rng.below(28),
        rng.below(24),
        rng.below(60),
        rng.below(60)
    );
    container(&[
        ("author", s(format!("author{}", rng.below(500)))),
        ("body", s(words(&mut rng, 18))),
        ("date", s(date)),
        ("id", num(i)),
        ("title", s(words(&mut rng, 5))),
    ])
}

fn item_path(i: usize) -> String {
    format!("/news:db/item[id='{i}']")
}

fn open(url: &str) -> Result<Store> {
    let store = Store::open(url)?;
    store.declare_list("/news:db/item", ListInfo::keyed(["id"]))?;
    Ok(store)
}

/// Creates items `0..n`, one commit per [`COMMIT_EVERY`].
fn create(store: &Store, n: usize) -> Result<()> {
    let mut start = 0;
    while start < n {
        crate::runner::check_interrupt()?;
        let end = (start + COMMIT_EVERY).min(n);
        let list = List::from_entries(ListInfo::keyed(["id"]), (start..end).map(item).collect())
            .map_err(|(i, e)| anyhow::anyhow!("item {}: {e}", start + i))?;
        let mut db = Container::default();
        db.children.insert("item".into(), Node::List(Box::new(list)));
        store.running().apply_owned(vec![Edit::merge("/news:db".parse()?, Node::Container(db))])?;
        start = end;
    }
    Ok(())
}

/// The random items of a run of `count` reads.
fn picks(n: usize, count: usize, run: usize) -> Vec<usize> {
    let mut rng = Rng::new(1000 + run as u64 * 31 + count as u64);
    (0..count).map(|_| rng.below(n as u64) as usize).collect()
}

/// Runs the rows at `size` items.
///
/// # Errors
/// Store errors, a failed probe process, a missing item.
pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let mut rows = Vec::new();
    let rss = RefCell::new(Vec::new());
    let dirs = RefCell::new(Vec::new());

    let canopy = cx.measure(
        &format!("create (commit every {COMMIT_EVERY})"),
        |_| {
            for d in dirs.borrow_mut().drain(..) {
                let _ = std::fs::remove_dir_all(d);
            }
            let d = cx.fresh_dir()?;
            let store = open(&cx.url(&d))?;
            dirs.borrow_mut().push(d);
            reset_peak_rss();
            Ok(store)
        },
        |store| {
            create(&store, n)?;
            rss.borrow_mut().push(peak_rss().unwrap_or(0));
            Ok(())
        },
    )?;
    let main_dir = dirs.borrow()[0].clone();
    let url = cx.url(&main_dir);
    // The create row names the sync mode its commits ran at.
    let (modes, sync);
    {
        let store = open(&url)?;
        modes = cx.modes(&store)?;
        sync = crate::runner::sync_of(&store);
        let count = store.running().count("/news:db/item")?;
        ensure!(count == n, "create stored {count} items, expected {n}");
    }
    let raw_dirs = RefCell::new(Vec::new());
    let floor = cx.measure(
        "create (floor)",
        |_| {
            for d in raw_dirs.borrow_mut().drain(..) {
                let _ = std::fs::remove_dir_all(d);
            }
            let d = cx.fresh_dir()?;
            let r = cx.floor(&d)?;
            raw_dirs.borrow_mut().push(d);
            Ok(r)
        },
        |mut r| {
            let mut start = 0;
            while start < n {
                let end = (start + COMMIT_EVERY).min(n);
                let pairs: Vec<_> = (start..end)
                    .map(|i| (fragment_key(&item_path(i)), canopy_store::fragment::encode(&item(i), None)))
                    .collect();
                r.put_all(&pairs)?;
                start = end;
            }
            Ok(())
        },
    )?;
    let raw_dir = raw_dirs.borrow()[0].clone();
    rows.push(
        Row::new(format!("create all items (commit every {COMMIT_EVERY}, {sync})"), Cell::Time(canopy))
            .floor(Cell::Time(floor)),
    );
    rows.push(Row::new("peak RSS during create", Cell::Bytes(rss.borrow().last().copied().unwrap_or(0))));
    let created_bytes = dir_bytes(&main_dir);
    rows.push(
        Row::new("bytes on disk after create", Cell::Bytes(created_bytes)).floor(Cell::Bytes(dir_bytes(&raw_dir))),
    );

    // Start-up to the first read, in a fresh process, before compaction.
    let probe_key = probe::hex(&fragment_key(&item_path(123 % n)));
    let probe_path = item_path(123 % n);
    let startup = |label: &str, rows: &mut Vec<Row>| -> Result<()> {
        if cx.probe.is_empty() {
            rows.push(Row::new(format!("start-up to first read {label}"), Cell::Missing("no probe command".into())));
            return Ok(());
        }
        let got = RefCell::new(Vec::new());
        let wall = cx.measure(
            &format!("start-up {label}"),
            |_| Ok(()),
            |()| {
                got.borrow_mut().push(probe::run(&cx.probe, &["store", &url, &probe_path])?);
                Ok(())
            },
        )?;
        let raw_got = RefCell::new(Vec::new());
        let raw_dir_s = raw_dir.display().to_string();
        cx.measure(
            &format!("start-up {label} (floor)"),
            |_| Ok(()),
            |()| {
                raw_got.borrow_mut().push(probe::run(&cx.probe, &["raw", &cx.backend, &raw_dir_s, &probe_key])?);
                Ok(())
            },
        )?;
        let inproc = |v: &[probe::Probed]| Sample { runs: v[1..].iter().map(|p| p.open_to_read).collect() };
        let got = got.into_inner();
        let raw_got = raw_got.into_inner();
        rows.push(
            Row::new(
                format!("start-up to first read {label} (open + get item, in a fresh process)"),
                Cell::Time(inproc(&got)),
            )
            .floor(Cell::Time(inproc(&raw_got))),
        );
        let raw_wall = Sample { runs: raw_got[1..].iter().map(|p| p.wall).collect::<Vec<Duration>>() };
        rows.push(
            Row::new(format!("start-up {label}: the whole process, spawn to exit"), Cell::Time(wall))
                .floor(Cell::Time(raw_wall)),
        );
        rows.push(
            Row::new(
                format!("start-up {label}: peak RSS of that process"),
                Cell::Bytes(got.last().map_or(0, |p| p.peak_rss)),
            )
            .floor(Cell::Bytes(raw_got.last().map_or(0, |p| p.peak_rss))),
        );
        Ok(())
    };
    startup("before compaction", &mut rows)?;

    // Compact: the same store, once per run (later runs find it compact).
    let store = open(&url)?;
    let rss = RefCell::new(0u64);
    let canopy = cx.measure(
        "compact",
        |_| {
            reset_peak_rss();
            Ok(())
        },
        |()| {
            store.compact()?;
            *rss.borrow_mut() = peak_rss().unwrap_or(0);
            Ok(())
        },
    )?;
    drop(store);
    let mut raw = cx.floor(&raw_dir)?;
    let floor = cx.measure("compact (floor)", |_| Ok(()), |()| raw.compact())?;
    drop(raw);
    rows.push(Row::new("compact", Cell::Time(canopy)).floor(Cell::Time(floor)));
    rows.push(Row::new("peak RSS during compact", Cell::Bytes(rss.into_inner())));
    startup("after compaction", &mut rows)?;

    // Reads: item 123, then random items; best of the runs, a fresh store each run.
    let raw = cx.floor(&raw_dir)?;
    for count in [1usize, 10, 100, 1000] {
        let label = if count == 1 { "item 123".to_string() } else { format!("{count} random items") };
        let list = |run: usize| if count == 1 { vec![123 % n] } else { picks(n, count, run) };
        let canopy = cx.measure(
            &label,
            |run| Ok((open(&url)?, list(run))),
            |(store, ids)| {
                let session = store.running();
                for i in ids {
                    match session.get_item(&item_path(i))? {
                        Some(Subtree::Entry(_)) => {}
                        other => anyhow::bail!("item {i}: {other:?}"),
                    }
                }
                Ok(())
            },
        )?;
        let floor = cx.measure(
            &format!("{label} (floor)"),
            |run| Ok(list(run)),
            |ids| {
                for i in ids {
                    ensure!(raw.get(&fragment_key(&item_path(i)))?.is_some(), "raw item {i} missing");
                }
                Ok(())
            },
        )?;
        rows.push(Row::new(format!("read {label}"), Cell::Time(canopy)).floor(Cell::Time(floor)).best_of());
    }
    drop(raw);
    let compacted = dir_bytes(&main_dir);
    rows.push(
        Row::new("bytes on disk after compaction", Cell::Bytes(compacted)).floor(Cell::Bytes(dir_bytes(&raw_dir))),
    );
    Ok(Table {
        backend: cx.label(),
        size,
        modes,
        rows,
        checks: vec![format!("checked: {n} items stored; every read found its item")],
    })
}

pub fn notes() -> Vec<String> {
    vec![format!(
        "objects: `/news:db/item[id]` with leaves title (5 words), body (18 words), author, date and id, about \
         200 bytes of text per item. Create commits every {COMMIT_EVERY} items, building the items inside the \
         timed run (the floor encodes the same fragments and puts them in the same batches). Start-up rows start \
         a new process (`canopy bench __probe`) that opens the store and reads item 123; the figure is measured \
         inside that process from before the open to after the read, the floor opens the raw engine and gets \
         the same key. Compaction runs on the created store, once per run. Read rows open a fresh store per \
         run (cache off) and report the best run, as the seed does. Peak RSS is the process's VmHWM, reset \
         before the row."
    )]
}
