//! Start-up probes: a fresh process that opens a store, reads one item, and
//! reports how long that took and its peak resident memory. The `objects`
//! suite starts it through the `canopy` binary (`canopy bench __probe …`),
//! so the time is what a user's process pays, caches of this one not helping.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The first argument that selects the probe (hidden from the usage text).
pub const ARG: &str = "__probe";

/// `store URL PATH` or `raw BACKEND DIR HEXKEY`: prints `NANOS PEAK_RSS_BYTES`.
/// `get URL QUERY` (writes what the query selects as JSON, counting the
/// bytes) and `import URL FILE LIST=KEY…` (imports the document into
/// running, declaring the lists) print `NANOS PEAK_RSS_BYTES BYTES FILE_RSS`:
/// the time from open to done, the process's peak RSS (`VmHWM`), the JSON
/// written (0 for import), and the resident pages of mapped files at the end
/// (`RssFile`: an LMDB store's map, which the kernel may drop at will).
///
/// # Errors
/// Bad arguments, a store error, a missing item.
pub fn main(args: &[String]) -> Result<()> {
    let t = Instant::now();
    match args {
        [kind, url, path] if kind == "store" => {
            let store = canopy::Store::open(url)?;
            let found = store.running().get_item(path)?;
            let d = t.elapsed();
            if found.is_none() {
                bail!("probe: {path} not found in {url}");
            }
            report(d);
        }
        [kind, backend, dir, key] if kind == "raw" => {
            let key = unhex(key)?;
            let r = crate::raw::open(backend, Path::new(dir), false)?;
            let found = r.get(&key)?;
            let d = t.elapsed();
            if found.is_none() {
                bail!("probe: key not found in the raw {backend} store");
            }
            report(d);
        }
        [kind, url, query] if kind == "get" => {
            let store = canopy::Store::open(url)?;
            let mut out = Counter(0);
            store.running().get_json(query, canopy::ReadOptions::default(), false, &mut out)?;
            report_more(t.elapsed(), out.0);
        }
        [kind, url, file, lists @ ..] if kind == "import" => {
            let store = canopy::Store::open(url)?;
            let mut decl = Vec::new();
            for l in lists {
                let (path, keys) = l.split_once('=').context("probe: a list is PATH=KEY,…")?;
                decl.push((path.to_string(), canopy::ListInfo::keyed(keys.split(','))));
            }
            let input = std::io::BufReader::new(std::fs::File::open(file).with_context(|| format!("opening {file}"))?);
            store.running().import_declared(input, canopy::Operation::Merge, &decl)?;
            report_more(t.elapsed(), 0);
        }
        _ => bail!("probe: expected `store URL PATH`, `raw BACKEND DIR HEXKEY`, `get URL QUERY` or `import URL FILE LIST=KEY…`"),
    }
    Ok(())
}

fn report(d: Duration) {
    println!("{} {}", d.as_nanos(), crate::timing::peak_rss().unwrap_or(0));
}

fn report_more(d: Duration, bytes: u64) {
    let file = crate::timing::rss_file().unwrap_or(0);
    println!("{} {} {bytes} {file}", d.as_nanos(), crate::timing::peak_rss().unwrap_or(0));
}

/// Counts what is written, keeping nothing.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn unhex(s: &str) -> Result<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2).context("odd hex")?, 16).context("bad hex"))
        .collect()
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What one probe process measured.
pub struct Probed {
    /// Open to first read, inside the process.
    pub open_to_read: Duration,
    /// Spawn to exit, seen from outside.
    pub wall: Duration,
    pub peak_rss: u64,
    /// JSON written (`get`).
    pub bytes: u64,
    /// Resident pages of mapped files at the end (`get`, `import`).
    pub file_rss: u64,
}

/// Starts `prefix __probe args…` and reads what it measured.
///
/// # Errors
/// The process cannot start, fails, or prints something else.
pub fn run(prefix: &[OsString], args: &[&str]) -> Result<Probed> {
    let (prog, lead) = prefix.split_first().context("no probe command")?;
    let t = Instant::now();
    let out = std::process::Command::new(prog)
        .args(lead)
        .arg(ARG)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("starting the probe {}", prog.to_string_lossy()))?;
    let wall = t.elapsed();
    if !out.status.success() {
        bail!("probe failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace();
    let ns: u64 = it.next().context("probe printed nothing")?.parse().context("probe output")?;
    let rss: u64 = it.next().context("probe printed no RSS")?.parse().context("probe output")?;
    let bytes: u64 = it.next().map_or(Ok(0), str::parse).context("probe output")?;
    let file_rss: u64 = it.next().map_or(Ok(0), str::parse).context("probe output")?;
    Ok(Probed { open_to_read: Duration::from_nanos(ns), wall, peak_rss: rss, bytes, file_rss })
}
