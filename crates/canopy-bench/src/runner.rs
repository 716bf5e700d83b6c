//! The runner of `canopy bench`: which suites, backends and sizes a run
//! takes ([`Options`], from [`crate::BenchArgs`]), the context a suite runs in
//! ([`Cx`]: a temporary directory, the store URLs, measuring), and running a
//! suite into a [`Report`].
//!
//! Every backend of every size runs in a fresh temporary directory that is
//! removed when it is done, on errors, and on Ctrl-C (the first one stops the
//! run at the next measured step; a second one exits at once).

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use canopy::Store;
use canopy_store::{StoreUrl, SyncMode};
use clap::Parser;

use crate::command::{BenchArgs, BenchCommand};
use crate::report::{Layout, Report, Table};
use crate::timing::Sample;

/// The embedded backends, the default first.
pub const EMBEDDED: [&str; 4] = ["lmdb", "sqlite", "snapshot", "json"];

/// The backends on database servers `--backends` takes when the environment
/// names a server (`scripts/servers.sh start` prints these variables): name,
/// the variable, and the URL parameter of a store's namespace. Every store of a
/// run gets a namespace of its own, named after its temporary directory; the
/// server keeps them (use a throwaway server). MongoDB's namespace is the
/// database, the URL's path (no parameter).
pub const SERVERS: [(&str, &str, &str); 4] = [
    ("postgres", "CANOPY_POSTGRES_URL", "schema"),
    ("redis", "CANOPY_REDIS_URL", "prefix"),
    ("etcd", "CANOPY_ETCD_URL", "prefix"),
    ("mongodb", "CANOPY_MONGODB_URL", ""),
];

/// The URL of a store of server backend `name` in the namespace of `dir`
/// (`tag` tells a floor's store from canopy's), with `params`; `None` for
/// a backend that is not a server's.
///
/// # Errors
/// The server's variable is not set.
pub fn server_store_url(name: &str, dir: &Path, tag: &str, params: &[String]) -> Result<Option<String>> {
    let Some((_, var, namespace)) = SERVERS.iter().find(|(n, _, _)| *n == name) else { return Ok(None) };
    let server = match std::env::var(var) {
        Ok(url) if !url.is_empty() => url,
        _ => bail!("`{name}` needs a server: set {var} (`eval \"$(scripts/servers.sh start)\"` does)"),
    };
    // Named after the run's temporary directory as well as the store's
    // (`s1`, `s2`... in every run): a server outlives runs, and a store of
    // an earlier run must not be taken for this one's.
    let run = dir.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = format!(
        "{}{}",
        run.rsplit('-').next().unwrap_or(""),
        dir.file_name().map_or("".into(), |n| n.to_string_lossy())
    );
    let ns = canopy_store::conformance::namespace_of(tag, Path::new(&name));
    if namespace.is_empty() {
        // The database: the path of `scheme://host:port/db?query`.
        let (base, query) = server.split_once('?').unwrap_or((&server, ""));
        let host_end = base.find("://").map_or(0, |i| i + 3);
        let base = match base[host_end..].find('/') {
            Some(i) => &base[..host_end + i],
            None => base,
        };
        let query: Vec<String> =
            query.split('&').filter(|q| !q.is_empty()).map(str::to_string).chain(params.iter().cloned()).collect();
        return Ok(Some(format!("{base}/{ns}?{}", query.join("&"))));
    }
    let mut query = vec![format!("{namespace}={ns}")];
    query.extend(params.iter().cloned());
    Ok(Some(canopy_store::conformance::with_params(&server, &query.join("&"))))
}

/// What `--size` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    /// The seed's sizes (the default).
    Seed,
    /// Each suite's smallest size, for CI.
    Small,
    /// These sizes.
    List(Vec<u64>),
}

/// Output format on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Json,
}

/// How a suite reaches the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The library, in this process.
    #[default]
    InProcess,
    /// `canopy serve` as a child process, over HTTP on loopback.
    Http,
}

/// Parsed arguments of a run.
#[derive(Clone, Debug)]
pub struct Options {
    pub suites: Vec<&'static Suite>,
    pub backends: Vec<BackendSpec>,
    pub size: SizeSpec,
    pub mode: Mode,
    pub repeat: Option<usize>,
    pub format: Format,
    pub out: Option<PathBuf>,
    /// The command (program and leading arguments) that starts a probe
    /// process: `PREFIX __probe …` (see [`crate::probe`]).
    pub probe: Vec<OsString>,
    /// Progress lines on stderr.
    pub progress: bool,
}

/// One suite: its sizes and the function that runs it on one backend at one size.
pub struct Suite {
    pub name: &'static str,
    pub title: &'static str,
    pub layout: Layout,
    pub seed_sizes: &'static [u64],
    pub small_size: u64,
    pub default_repeat: usize,
    pub run: fn(&Cx, u64) -> Result<Table>,
    /// Notes printed under the tables (what the rows time, the generator's shape).
    pub notes: fn() -> Vec<String>,
    /// The suite over HTTP (`--mode http`), where it has that mode.
    pub http: Option<HttpMode>,
}

/// A suite's HTTP mode: its run and notes, in place of the in-process ones.
#[derive(Clone, Copy)]
pub struct HttpMode {
    pub run: fn(&Cx, u64) -> Result<Table>,
    pub notes: fn() -> Vec<String>,
}

impl std::fmt::Debug for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every suite, in the order `all` runs them.
pub fn suites() -> &'static [Suite] {
    &crate::suites::ALL
}

/// The suites, for messages.
const SUITES: &str = "sysrepo, keyset, objects, cps, rpm, server, or all of them";

/// Parses the arguments after `bench` (as `canopy-bench` takes them).
///
/// # Errors
/// What clap refuses (unknown options, a malformed `--repeat` or `--format`),
/// and what [`Options::from_args`] refuses.
pub fn parse_args(args: &[String], probe: Vec<OsString>) -> Result<Options> {
    let parsed = BenchCommand::try_parse_from(std::iter::once("canopy-bench").chain(args.iter().map(String::as_str)))
        .map_err(anyhow::Error::new)?;
    Options::from_args(parsed.args, probe)
}

impl Options {
    /// The options of a run from its arguments: the suite and backends named,
    /// the sizes read.
    ///
    /// # Errors
    /// No suite or an unknown one, unknown or non-embedded backends, sizes
    /// that are not positive numbers, arguments left over.
    pub fn from_args(args: BenchArgs, probe: Vec<OsString>) -> Result<Options> {
        let Some(suite) = args.suite else { bail!("which suite? {SUITES} (see --help)") };
        if let Some(extra) = args.probe_args.first() {
            bail!("unexpected argument `{extra}`: one suite ({SUITES}), then options");
        }
        let http = args.mode == Mode::Http;
        let suites: Vec<&'static Suite> = if suite == "all" {
            suites().iter().filter(|s| !http || s.http.is_some()).collect()
        } else {
            match suites().iter().find(|s| s.name == suite) {
                Some(s) if http && s.http.is_none() => {
                    bail!("--mode http: suite `{suite}` has no HTTP mode (cps has; `server` is HTTP already)")
                }
                Some(s) => vec![s],
                None => bail!("unknown suite `{suite}` ({SUITES})"),
            }
        };
        let backends = match &args.backends {
            None => EMBEDDED.iter().map(|s| BackendSpec::plain(s)).collect(),
            Some(v) => parse_backends(v)?,
        };
        Ok(Options {
            suites,
            backends,
            size: parse_size(&args.size)?,
            mode: args.mode,
            repeat: args.repeat.map(|r| r as usize),
            format: args.format,
            out: args.out,
            probe,
            progress: !args.quiet,
        })
    }
}

/// `--backends a,b?k=v&k=v,…`: each entry checked by opening a store with its
/// options (see [`BackendSpec::parse`]); an entry given twice is refused, so
/// every table's label names one run.
fn parse_backends(v: &str) -> Result<Vec<BackendSpec>> {
    let mut list: Vec<BackendSpec> = Vec::new();
    for text in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let spec = BackendSpec::parse(text)?;
        if list.iter().any(|b| b.label == spec.label) {
            bail!("--backends: `{}` is given twice", spec.label);
        }
        list.push(spec);
    }
    if list.is_empty() {
        bail!("--backends: give at least one backend");
    }
    Ok(list)
}

/// One entry of `--backends`: a backend and the store URL options its stores
/// are opened with (`lmdb?sync=off`, `sqlite?sync=off&cache=on`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendSpec {
    /// The backend: lmdb, sqlite, snapshot, json or memory.
    pub name: String,
    /// The URL parameters after `?`, as the store's URL parser reads them.
    pub options: std::collections::BTreeMap<String, String>,
    /// The entry as written (without a trailing `?`): the label of its tables.
    pub label: String,
}

impl BackendSpec {
    /// A backend without options.
    pub fn plain(name: &str) -> BackendSpec {
        BackendSpec { name: name.into(), options: Default::default(), label: name.into() }
    }

    /// Reads `NAME` or `NAME?OPTIONS`, and checks the options by opening a
    /// store with them in a temporary directory, so that the store's own URL
    /// parsing refuses what it does not know (`lmdb?syncc=off`,
    /// `lmdb?lock_timeout=1s`, `memory?sync=off`, `sqlite?cache=maybe`) before
    /// anything runs.
    ///
    /// # Errors
    /// An unknown or non-embedded backend; options the store refuses.
    pub fn parse(text: &str) -> Result<BackendSpec> {
        let (name, query) = match text.split_once('?') {
            Some((n, q)) => (n.trim(), q.trim()),
            None => (text.trim(), ""),
        };
        let server = SERVERS.iter().any(|(n, _, _)| *n == name);
        if !EMBEDDED.contains(&name) && name != "memory" && !server {
            bail!(
                "--backends: unknown backend `{name}` (lmdb, sqlite, snapshot, json, memory; postgres, redis, etcd, \
                 mongodb with a server)"
            );
        }
        if server {
            server_store_url(name, Path::new("check"), "b_", &[]).map_err(|e| anyhow::anyhow!("--backends: {e}"))?;
        }
        let mut spec = BackendSpec::plain(name);
        if !query.is_empty() {
            let url =
                StoreUrl::parse(&format!("{name}:DIR?{query}")).map_err(|e| anyhow::anyhow!("--backends: {e}"))?;
            spec.options = url.params;
            spec.label = format!("{name}?{query}");
        }
        let tmp = tempfile::Builder::new()
            .prefix(&format!("canopy-bench-check-{name}-"))
            .tempdir()
            .context("creating a temporary directory")?;
        let url = spec.url(tmp.path(), &[]);
        if let Err(e) = Store::open(&url) {
            let dir = tmp.path().display().to_string();
            bail!("--backends: `{}`: {}", spec.label, e.to_string().replace(&dir, "DIR"));
        }
        Ok(spec)
    }

    /// The store URL of this backend in `dir`: its options, then `fixed`
    /// over them (a row about a mode keeps it: rpm's sync rows, sysrepo's
    /// cached rows). The memory backend has no `sync` to fix.
    pub fn url(&self, dir: &Path, fixed: &[(&str, &str)]) -> String {
        let mut params = self.options.clone();
        for (k, v) in fixed {
            // Rows about the cache keep the entry's `cache=watch`.
            let watched = *k == "cache" && *v == "on" && self.options.get("cache").is_some_and(|c| c == "watch");
            let memory_sync = self.name == "memory" && *k == "sync";
            if !(watched || memory_sync) {
                params.insert(k.to_string(), v.to_string());
            }
        }
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        // Checked when the entry was parsed.
        if let Ok(Some(url)) = server_store_url(&self.name, dir, "b_", &query) {
            return url;
        }
        let location = match self.name.as_str() {
            "sqlite" => dir.join("store.db").display().to_string(),
            "snapshot" => dir.join("store.snap").display().to_string(),
            "json" => dir.join("store.json").display().to_string(),
            "memory" => "bench".into(),
            _ => dir.display().to_string(),
        };
        match query.is_empty() {
            true => format!("{}:{location}", self.name),
            false => format!("{}:{location}?{}", self.name, query.join("&")),
        }
    }

    /// The sync mode this backend's stores are opened at (unless a row fixes
    /// another), as the store's URL parser reads it.
    pub fn sync(&self) -> SyncMode {
        // Checked when the entry was parsed.
        StoreUrl::parse(&self.url(Path::new("DIR"), &[])).and_then(|u| u.sync_mode()).unwrap_or(SyncMode::Commit)
    }
}

/// An entry equals the text it was written as (`o.backends == ["lmdb", "lmdb?sync=off"]`).
impl PartialEq<&str> for BackendSpec {
    fn eq(&self, other: &&str) -> bool {
        self.label == *other
    }
}

impl std::fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

/// `sync=commit`, `sync=off`, or `in memory` for the memory backend (which
/// writes nothing to flush), as `store` reports it.
pub fn sync_of(store: &Store) -> &'static str {
    if store.backend().kind() == "memory" {
        return "in memory";
    }
    match store.backend().sync_mode() {
        SyncMode::Commit => "sync=commit",
        SyncMode::Off => "sync=off",
    }
}

/// `--size seed|small|N[,N…]`.
fn parse_size(v: &str) -> Result<SizeSpec> {
    Ok(match v {
        "seed" => SizeSpec::Seed,
        "small" => SizeSpec::Small,
        list => SizeSpec::List(
            list.split(',')
                .map(|n| {
                    let n = n.trim().replace('_', "");
                    match n.parse::<u64>() {
                        Ok(x) if x > 0 => Ok(x),
                        _ => bail!("--size: `{n}` is not a positive number (or small, seed)"),
                    }
                })
                .collect::<Result<_>>()?,
        ),
    })
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes Ctrl-C stop the run at the next measured step (the temporary stores
/// are then removed as the run unwinds); a second Ctrl-C exits at once with
/// status 130. Installed once per process; if another handler is already
/// installed, Ctrl-C keeps doing what that one does.
pub fn install_sigint() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let installed = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
        if let Err(e) = installed {
            eprintln!("canopy bench: Ctrl-C will not remove the temporary stores: {e}");
        }
    });
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The error a run stops with after Ctrl-C (the command reports it as
/// [`crate::Error::Interrupted`]).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted; temporary stores removed")
    }
}

impl std::error::Error for Interrupted {}

/// Fails with [`Interrupted`] after Ctrl-C: call it in long loops.
///
/// # Errors
/// [`Interrupted`].
pub fn check_interrupt() -> Result<()> {
    if interrupted() {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// What a suite run sees: the backend, the temporary directory, repeat count,
/// progress output.
pub struct Cx {
    pub suite: &'static str,
    /// The backend's name (`lmdb`): which raw engine is the floor.
    pub backend: String,
    /// The `--backends` entry: the backend and its store options.
    pub spec: BackendSpec,
    pub repeat: usize,
    pub probe: Vec<OsString>,
    /// In-process or over HTTP (`--mode`).
    pub mode: Mode,
    tmp: tempfile::TempDir,
    next_dir: std::cell::Cell<usize>,
    size: u64,
    progress: bool,
    tty: bool,
    last_row: std::cell::RefCell<String>,
}

impl Cx {
    /// A context on `backend` with a fresh temporary directory.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new(
        suite: &'static str,
        spec: &BackendSpec,
        repeat: usize,
        probe: Vec<OsString>,
        progress: bool,
    ) -> Result<Cx> {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("canopy-bench-{suite}-{}-", spec.name))
            .tempdir()
            .context("creating a temporary directory")?;
        Ok(Cx {
            suite,
            backend: spec.name.clone(),
            spec: spec.clone(),
            repeat: repeat.max(1),
            probe,
            mode: Mode::InProcess,
            tmp,
            next_dir: std::cell::Cell::new(0),
            size: 0,
            progress,
            tty: std::io::stderr().is_terminal(),
            last_row: std::cell::RefCell::new(String::new()),
        })
    }

    /// The temporary directory (removed when the context is dropped).
    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// A new empty directory under the temporary one.
    ///
    /// # Errors
    /// It cannot be created.
    pub fn fresh_dir(&self) -> Result<PathBuf> {
        self.next_dir.set(self.next_dir.get() + 1);
        let d = self.tmp.path().join(format!("s{}", self.next_dir.get()));
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }

    /// The label of this context's tables: the `--backends` entry as written.
    pub fn label(&self) -> String {
        self.spec.label.clone()
    }

    /// The store URL of this context's backend in `dir`, with the options of
    /// its `--backends` entry (by default `sync=commit`, no cache).
    pub fn url(&self, dir: &Path) -> String {
        self.spec.url(dir, &[])
    }

    /// [`Cx::url`] with `fixed` parameters over the entry's options, for rows
    /// about a mode (`cache=on` for sysrepo's cached rows, rpm's sync rows).
    pub fn url_with(&self, dir: &Path, fixed: &[(&str, &str)]) -> String {
        self.spec.url(dir, fixed)
    }

    /// The sync mode of this context's stores, which the floors use too.
    pub fn sync(&self) -> SyncMode {
        self.spec.sync()
    }

    /// The floor (the backend's raw engine) in `dir`, flushing its commits as
    /// this context's stores do.
    ///
    /// # Errors
    /// Errors of the engine.
    pub fn floor(&self, dir: &Path) -> Result<Box<dyn crate::raw::RawStore>> {
        crate::raw::open(&self.backend, dir, self.sync() == SyncMode::Commit)
    }

    /// The modes line of a table whose stores are opened as `store` was:
    /// its sync and cache modes as the store reports them, and that the
    /// floors flush as it does (checked).
    ///
    /// # Errors
    /// The store runs at another sync mode than the floors would.
    pub fn modes(&self, store: &Store) -> Result<String> {
        let sync = sync_of(store);
        if sync != "in memory" {
            ensure!(
                store.backend().sync_mode() == self.sync(),
                "{}: the store and its floors differ in sync mode",
                self.spec
            );
        }
        let floors = if sync == "in memory" { "" } else { " (floors too)" };
        Ok(format!("{sync}{floors}, cache={}", store.cache_mode()))
    }

    /// Progress on stderr: suite, backend, size, row, run.
    pub fn progress(&self, row: &str, run: usize, of: usize) -> Result<()> {
        check_interrupt()?;
        if !self.progress {
            return Ok(());
        }
        let line = format!("[{}] {} · size {} · {row}", self.suite, self.spec, self.size);
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K{line} · run {run}/{of}");
            let _ = err.flush();
        } else if line != *self.last_row.borrow() {
            let _ = writeln!(err, "{line}");
        }
        *self.last_row.borrow_mut() = line;
        Ok(())
    }

    /// Runs `timed` once to warm up and then `repeat` times, each after an
    /// untimed `setup` (given the run number, 0 for the warm-up), on the
    /// monotonic clock.
    ///
    /// # Errors
    /// The first error of `setup` or `timed`; [`Interrupted`].
    pub fn measure<S>(
        &self,
        row: &str,
        setup: impl FnMut(usize) -> Result<S>,
        timed: impl FnMut(S) -> Result<()>,
    ) -> Result<Sample> {
        let repeat = self.repeat;
        self.measure_n(row, repeat, setup, timed)
    }

    /// [`Cx::measure`] with an explicit number of measured runs.
    ///
    /// # Errors
    /// As [`Cx::measure`].
    pub fn measure_n<S>(
        &self,
        row: &str,
        repeat: usize,
        mut setup: impl FnMut(usize) -> Result<S>,
        mut timed: impl FnMut(S) -> Result<()>,
    ) -> Result<Sample> {
        let mut runs = Vec::with_capacity(repeat);
        for i in 0..=repeat {
            self.progress(row, i, repeat)?;
            let s = setup(i).with_context(|| format!("{row}: setting up run {i}"))?;
            let t = Instant::now();
            timed(s).with_context(|| format!("{row}: run {i}"))?;
            let d = t.elapsed();
            if i > 0 {
                runs.push(d);
            }
        }
        Ok(Sample { runs })
    }
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The sizes a suite runs at.
pub fn sizes_for(suite: &Suite, spec: &SizeSpec) -> Vec<u64> {
    match spec {
        SizeSpec::Seed => suite.seed_sizes.to_vec(),
        SizeSpec::Small => vec![suite.small_size],
        SizeSpec::List(l) => l.clone(),
    }
}

/// A one-line description of the machine, for the reports.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<u64>().ok()))
        .map_or_else(|| "? GB".into(), |kb| format!("{:.1} GB", kb as f64 / 1024.0 / 1024.0));
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {mem} RAM; load average at start {load}")
}

/// Runs one suite over the chosen backends and sizes.
///
/// # Errors
/// Store and file errors; [`Interrupted`].
pub fn run_suite(suite: &'static Suite, o: &Options) -> Result<Report> {
    run_suite_with(suite, o, |_| Ok(()))
}

/// [`run_suite`], calling `done` with the report so far after each table (a
/// long run keeps what it measured if it is stopped later).
///
/// # Errors
/// As [`run_suite`], and the errors of `done`.
pub fn run_suite_with(
    suite: &'static Suite,
    o: &Options,
    mut done: impl FnMut(&Report) -> Result<()>,
) -> Result<Report> {
    let repeat = o.repeat.unwrap_or(suite.default_repeat);
    let sizes = sizes_for(suite, &o.size);
    let (run, notes, file, title) = match (o.mode, suite.http) {
        (Mode::Http, Some(h)) => (h.run, h.notes, format!("{}-http", suite.name), format!("{} over HTTP", suite.title)),
        (Mode::Http, None) => bail!("suite `{}` has no HTTP mode", suite.name),
        (Mode::InProcess, _) => (suite.run, suite.notes, suite.name.to_string(), suite.title.to_string()),
    };
    let mut report = Report {
        suite: suite.name.into(),
        file,
        title,
        layout: suite.layout,
        params: vec![
            ("data set sizes".into(), sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
            ("each test executed".into(), format!("{repeat} times after one warm-up run")),
            ("backends".into(), o.backends.iter().map(|b| b.label.as_str()).collect::<Vec<_>>().join(", ")),
            ("machine".into(), machine()),
        ],
        tables: Vec::new(),
        notes: notes(),
    };
    for &size in &sizes {
        for backend in &o.backends {
            let mut cx = Cx::new(suite.name, backend, repeat, o.probe.clone(), o.progress)?;
            cx.size = size;
            cx.mode = o.mode;
            let table = run(&cx, size).with_context(|| format!("{} on {backend} at size {size}", suite.name))?;
            report.tables.push(table);
            if cx.tty && cx.progress {
                eprint!("\r\x1b[K");
            }
            done(&report)?;
        }
    }
    Ok(report)
}

/// Writes `SUITE.md`, `SUITE.json` and `SUITE.svg` into `out`.
///
/// # Errors
/// Write errors.
pub fn write_reports(out: &Path, report: &Report) -> Result<()> {
    let write = |ext: &str, text: String| -> Result<()> {
        let p = out.join(format!("{}.{ext}", report.file));
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("md", report.to_markdown())?;
    write("json", serde_json::to_string_pretty(&report.to_json())?)?;
    write("svg", report.to_svg())
}
