//! `canopy`: the command-line client of a canopy store. It parses arguments,
//! calls the library, prints results on stdout and one line per write or error
//! on stderr. Exit status: 0 success, 1 a user error (bad path, JSON, URL,
//! missing node, damaged store), 2 an internal error.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::process::ExitCode;

use anyhow::Result;
use canopy::{Commit, Insert, ListInfo, Operation, ReadOptions, Session, Store, Value};
use canopy_store::keys::Datastore;
use canopy_store::SyncMode;
use clap::{Parser, Subcommand};

mod progress;
mod remote;
use progress::{Progress, Unit};

#[derive(Parser)]
#[command(name = "canopy", version, about = "Read and edit a canopy store of hierarchical configuration data.")]
struct Cli {
    /// Store URL: `lmdb:DIR?sync=commit|off&cache=on`, a bare directory (LMDB),
    /// `sqlite:FILE?sync=commit|off`, `memory:NAME` (empty at every start), or a
    /// database server's (`postgres://`, `redis://`, `etcd://`, `mongodb://`; there
    /// `cache=watch` caches trusting the server's announcements of commits).
    /// Default: $CANOPY_STORE, else ./canopy-data.
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,
    /// Datastore: running, startup, candidate or operational. On operational,
    /// reads show running's configuration merged with state; writes store state.
    #[arg(long, global = true, value_name = "NAME", default_value = "running")]
    ds: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print what a path or XPath query selects, with its ancestors, as RFC 7951 JSON
    /// (`{}` when nothing matches).
    Get {
        /// Instance path (`/m:cont/lst[k='1']`) or query (`//lst[l='x']`).
        path: String,
        /// Levels of data nodes to include below each selected node.
        #[arg(long, value_name = "N")]
        depth: Option<usize>,
        /// One line, no whitespace.
        #[arg(long)]
        compact: bool,
        /// With a YANG schema, how defaults are reported (RFC 6243): explicit
        /// (what is stored), report-all (every default that applies), trim
        /// (stored values equal to their default left out).
        #[arg(long, value_name = "MODE", default_value = "explicit", value_parser = ["explicit", "report-all", "trim"])]
        with_defaults: String,
    },
    /// Set a leaf (VALUE: JSON scalar text, else a string), or merge a JSON
    /// object or array at PATH.
    Set { path: String, value: String },
    /// Delete a node; fails if it does not exist.
    Delete { path: String },
    /// Push operational state owned by this command (whatever --ds says): set
    /// each PATH to its VALUE (as `set` does) and merge the JSON document of
    /// --file at /, print `pushed`, then hold the state until stdin closes or
    /// the process ends (Ctrl-C, kill); meanwhile `--ds operational` reads in
    /// other processes show it. State that outlives the command is written
    /// with `--ds operational set` instead.
    Push {
        /// PATH VALUE pairs.
        #[arg(value_name = "PATH VALUE")]
        pairs: Vec<String>,
        /// An RFC 7951 JSON document to push (merged at /).
        #[arg(long, value_name = "FILE")]
        file: Option<String>,
    },
    /// Apply a JSON document as one edit at PATH, in one transaction. The document
    /// holds the node as its only member (`{"lst": [{...}]}` for a list entry);
    /// at `/` it is a whole document. delete and remove take no document.
    Edit {
        /// JSON file, or `-` for stdin.
        #[arg(value_name = "FILE|-")]
        file: Option<String>,
        #[arg(long, default_value = "merge", value_parser = ["merge", "replace", "create", "delete", "remove"])]
        op: String,
        #[arg(long, default_value = "/")]
        path: String,
        /// Position in a user-ordered list: first, last, before=KEY[,KEY..], after=KEY[,KEY..].
        #[arg(long, value_name = "WHERE")]
        insert: Option<String>,
    },
    /// Merge (or with --replace, replace) the datastore with an RFC 7951 JSON document.
    Import {
        /// JSON file, or `-` for stdin.
        #[arg(value_name = "FILE|-")]
        file: String,
        /// Replace the whole datastore instead of merging into it.
        #[arg(long)]
        replace: bool,
        /// Declare a keyed list before importing (lists not declared or already
        /// known are keyless), e.g. `/m:cont/lst=k1,k2`.
        #[arg(long, value_name = "SCHEMA_PATH=KEYS")]
        list: Vec<String>,
        /// Declare a user-ordered keyed list before importing.
        #[arg(long, value_name = "SCHEMA_PATH=KEYS")]
        user_ordered: Vec<String>,
    },
    /// Print the datastore (or the subtree at PATH) as RFC 7951 JSON.
    Export {
        #[arg(default_value = "/")]
        path: String,
        #[arg(long)]
        compact: bool,
    },
    /// Rewrite the store so that space freed by deletes returns to the filesystem.
    Compact,
    /// Verify the store; prints each problem (exit 1) or `ok`.
    Check,
    /// The store's YANG schema: `schema add FILE.yang… [--search DIR]`, `schema list`,
    /// `schema validation [full|structure]`.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
    /// Print how many nodes a query selects.
    Count { query: String },
    /// Print the backend, revision, fragment count, bytes on disk and sync mode.
    Info,
    /// Work on whole datastores: copy one onto another, commit or discard the
    /// candidate, show the candidate's state and the locks held.
    Datastore {
        #[command(subcommand)]
        op: DatastoreCommand,
    },
    /// Run a benchmark suite against every embedded backend (or --backends) in
    /// temporary stores and print its tables.
    #[cfg(feature = "bench")]
    Bench(canopy_bench::BenchArgs),
    /// Run a benchmark suite (not enabled in this build).
    #[cfg(not(feature = "bench"))]
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Serve the store over HTTP: RESTCONF (RFC 8040) on /restconf, the NMDA
    /// datastores on /restconf/ds/ietf-datastores:NAME, change streams on
    /// /restconf/streams/NAME. Prints `listening on http://ADDR` (https with
    /// TLS) once ready; SIGTERM or Ctrl-C stops it after the requests under way.
    Serve {
        /// Address to listen on (port 0: any free port). Only loopback
        /// addresses, unless both --users and TLS are given.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8040")]
        listen: std::net::SocketAddr,
        /// Largest request body accepted, in bytes.
        #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
        max_body: usize,
        /// Users file (see `canopy user`): every request then needs HTTP Basic
        /// or bearer credentials, and each user reads or writes only the
        /// datastores its entry allows. Without it, no authentication.
        #[arg(long, value_name = "FILE")]
        users: Option<std::path::PathBuf>,
        /// Serve HTTPS with this certificate chain (PEM, the server's first).
        #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The private key of --tls-cert (PEM).
        #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// Seconds a client may take to send a request head (on a new
        /// connection, or one kept alive between requests); past it the
        /// connection is closed. Bodies and replies under way,
        /// change streams and websockets have no such limit.
        #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
        header_timeout: u64,
    },
    /// Manage the users file of `serve --users`: add a user with a password,
    /// make a bearer token, remove either.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Print every change committed under PATH on a `canopy serve` server, one
    /// JSON line per commit (RFC 8641 push-change-update), until interrupted.
    /// Credentials come from $CANOPY_TOKEN or $CANOPY_USER and $CANOPY_PASSWORD.
    Watch {
        #[arg(default_value = "/")]
        path: String,
        /// The server's URL.
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8040")]
        server: String,
        /// Start after this revision (the commits after it that the server still keeps).
        #[arg(long, value_name = "REVISION")]
        since: Option<u64>,
    },
    /// Follow the commits of a `canopy serve` server that change PATH: print
    /// each event as a JSON line. Without --validate it only watches (apply
    /// and abort events; read access is enough); with --validate it takes
    /// part in every commit: CMD runs (by `sh -c`, the event on stdin) for
    /// each validate, exit status 0 accepts the commit, any other rejects it
    /// with CMD's stderr (write access to the datastore needed).
    Subscribe {
        path: String,
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8040")]
        server: String,
        /// Higher priorities are asked first (with --validate).
        #[arg(long, default_value_t = 0)]
        priority: i32,
        /// How long the server waits for each answer before it aborts the
        /// commit and drops this subscriber (with --validate).
        #[arg(long, value_name = "MS", default_value_t = 5000)]
        timeout_ms: u64,
        #[arg(long, value_name = "CMD")]
        validate: Option<String>,
    },
    /// Provide operational state below PATH to a `canopy serve` server: each
    /// read runs CMD (by `sh -c`, the path read as $1) and merges the RFC 7951
    /// JSON document it prints (from the datastore root).
    Provide {
        path: String,
        #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8040")]
        server: String,
        #[arg(long, value_name = "CMD")]
        cmd: String,
        #[arg(long, value_name = "MS", default_value_t = 5000)]
        timeout_ms: u64,
    },
    /// Copy a whole store into an empty store of any backend (--store is not used).
    Copy {
        #[arg(long, value_name = "URL")]
        from: String,
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// The access of `user add` and `user token`.
const ACCESS_HELP: &str = "Access per datastore: DS=MODE items separated by commas, DS running, candidate, \
startup, operational or * (all), MODE rw, ro or none; later items override earlier ones, datastores not named get \
none. E.g. `*=ro,running=rw`";

#[derive(Subcommand)]
enum UserCommand {
    /// Add a user, or give an existing one a new password and access. The
    /// password is the first line of standard input. Creates FILE (mode 0600)
    /// if there is none.
    Add {
        /// The users file.
        file: std::path::PathBuf,
        /// The user's name: letters, digits and . _ @ -.
        name: String,
        #[arg(long, value_name = "SPEC", help = ACCESS_HELP)]
        access: String,
    },
    /// Make a new random bearer token for NAME (replacing NAME's old token),
    /// print it on standard output (only this once: FILE keeps its hash).
    Token {
        /// The users file.
        file: std::path::PathBuf,
        /// The token's name (for people: requests show only the token).
        name: String,
        #[arg(long, value_name = "SPEC", help = ACCESS_HELP)]
        access: String,
    },
    /// Remove the user or token NAME.
    Remove {
        /// The users file.
        file: std::path::PathBuf,
        name: String,
    },
}

#[derive(Subcommand)]
enum DatastoreCommand {
    /// Replace datastore TO with the contents of FROM (running, startup or candidate).
    Copy { from: String, to: String },
    /// Commit the candidate to running.
    Commit,
    /// Drop the candidate's changes: it reads as running again.
    Discard,
    /// Show whether the candidate holds uncommitted changes and which locks are held.
    Status,
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Add YANG modules to the store's schema (replacing stored modules of the
    /// same name). Imports are taken from the store, then from the search
    /// directories. From then on, every commit is validated against them.
    Add {
        /// YANG files (`.yang`).
        #[arg(required = true, value_name = "FILE.yang")]
        files: Vec<std::path::PathBuf>,
        /// Directory searched (recursively) for imported and included modules
        /// by name: NAME.yang or NAME@REVISION.yang, whose newest revision
        /// statement must match an import's revision-date. May be given
        /// several times.
        #[arg(long, value_name = "DIR")]
        search: Vec<std::path::PathBuf>,
    },
    /// List the modules of the store's schema: name, revision, implemented or import-only.
    List,
    /// Show or set how much of the schema commits are checked against:
    /// `full` (every constraint: mandatory nodes, min/max-elements, unique,
    /// leafrefs, instance-identifiers, must, when) or `structure` (names,
    /// structure and types only, as ONAP CPS checks data).
    Validation {
        /// The level to set; without it, the level is printed.
        #[arg(value_name = "full|structure")]
        level: Option<String>,
    },
}

/// A user error found here rather than in the library (an unreadable file, a
/// malformed option value).
#[derive(Debug)]
struct UserError(String);

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) if broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            match violations(&e) {
                Some(all) if all.len() > 1 => eprint!("{}", list_violations(all, MAX_LISTED)),
                _ => eprintln!("canopy: {}", format!("{e:#}").replace('\n', " ")),
            }
            ExitCode::from(exit_status(&e))
        }
    }
}

/// How many problems of a refused transaction the CLI lists: a screenful.
const MAX_LISTED: usize = 20;

/// The problems of a transaction the schema refused, if that is the error.
fn violations(e: &anyhow::Error) -> Option<&[canopy::Violation]> {
    e.chain().find_map(|c| match c.downcast_ref::<canopy::Error>() {
        Some(canopy::Error::Invalid(v)) => Some(v.as_slice()),
        _ => None,
    })
}

/// A refusal as people read it: a heading, then one problem per line (path,
/// then reason), at most `max` of them, then how many more there are.
fn list_violations(all: &[canopy::Violation], max: usize) -> String {
    use std::fmt::Write as _;
    let mut out = format!("canopy: the schema refuses the transaction ({} problems); nothing was stored\n", all.len());
    for v in all.iter().take(max) {
        let reason = v.reason.replace('\n', " ");
        let _ = writeln!(out, "  {}: {}", v.path, shorten(&reason, 240));
    }
    if all.len() > max {
        let _ = writeln!(out, "  ... and {} more", all.len() - max);
    }
    out
}

/// `text` cut to at most `max` characters, marked where it was cut.
fn shorten(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => text.into(),
        Some((at, _)) => format!("{}...", &text[..at]).into(),
    }
}

/// 1 for the user's errors, 2 for internal ones.
fn exit_status(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(err) = cause.downcast_ref::<canopy::Error>() {
            return if err.is_user_error() { 1 } else { 2 };
        }
        if cause.is::<UserError>() {
            return 1;
        }
    }
    2
}

/// A reader of our output went away (`canopy export | head`): not an error.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// Set in the child process that runs `check` for its parent.
const CHECK_CHILD: &str = "CANOPY_CHECK_CHILD";

/// Runs `check` in a child process: LMDB has no page checksums and can crash
/// (SIGSEGV, SIGBUS) reading a file damaged in its data pages, and a damaged
/// store is exactly what `check` is run on. A crash of the child is reported as
/// a damaged store.
fn check_in_child(url: &str) -> Result<ExitCode> {
    let status = std::process::Command::new(std::env::current_exe()?)
        .args(std::env::args_os().skip(1))
        .env(CHECK_CHILD, "1")
        .status()?;
    if let Some(code) = status.code() {
        return Ok(ExitCode::from(u8::try_from(code).unwrap_or(2)));
    }
    use std::os::unix::process::ExitStatusExt;
    let signal = status.signal().unwrap_or(0);
    let url = canopy_store::StoreUrl::parse(url).map_or_else(|_| url.to_string(), |u| u.redacted().to_string());
    Err(UserError(format!(
        "store {url} is damaged: the storage engine crashed reading it (signal {signal}); restore it from a backup"
    ))
    .into())
}

fn run(cli: Cli) -> Result<ExitCode> {
    let ds: Datastore = cli.ds.parse().map_err(UserError)?;
    let url = match cli.store {
        Some(url) => url,
        None => {
            std::env::var("CANOPY_STORE").ok().filter(|s| !s.is_empty()).unwrap_or(canopy::open::DEFAULT_STORE.into())
        }
    };
    if matches!(cli.command, Command::Check) && std::env::var_os(CHECK_CHILD).is_none() {
        return check_in_child(&url);
    }
    #[cfg(feature = "bench")]
    if let Command::Bench(args) = cli.command {
        return bench(args);
    }
    #[cfg(not(feature = "bench"))]
    if let Command::Bench { .. } = cli.command {
        return Err(UserError("bench is not enabled in this build".into()).into());
    }
    if let Command::Copy { from, to } = &cli.command {
        let (source, dest) = (Store::open(from)?, Store::open(to)?);
        // The destination as its store shows it: without a password.
        let to = dest.url();
        let progress = Progress::new(&format!("copying to {to}"), source.backend().approx_len()?, Unit::Records);
        let report = canopy::copy_with_progress(&source, &dest, &mut |n| progress.set(n))?;
        drop(progress);
        eprintln!(
            "copied {} keys ({} fragments) of revision {} in {} batches; {to} is at revision {}",
            report.keys, report.fragments, report.source_revision, report.batches, report.revision
        );
        return Ok(ExitCode::SUCCESS);
    }
    match &cli.command {
        Command::Watch { path, server, since } => return remote::watch(server, &cli.ds, path, *since),
        Command::Subscribe { path, server, priority, timeout_ms, validate } => {
            return remote::subscribe(server, &cli.ds, path, *priority, *timeout_ms, validate.as_deref())
        }
        Command::Provide { path, server, cmd, timeout_ms } => return remote::provide(server, path, cmd, *timeout_ms),
        _ => {}
    }
    if let Command::User { command } = cli.command {
        return user(command);
    }
    if let Command::Serve { listen, max_body, users, tls_cert, tls_key, header_timeout } = cli.command {
        // The users file and certificates are checked before the store opens.
        let users = match users {
            Some(file) => {
                Some(std::sync::Arc::new(canopy_server::Users::load(&file).map_err(|e| UserError(e.to_string()))?))
            }
            None => None,
        };
        let tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => Some(canopy_server::tls_config(&cert, &key).map_err(serve_error)?),
            _ => None,
        };
        let header_timeout = std::time::Duration::from_secs(header_timeout);
        let config = canopy_server::Config { listen, max_body, users, tls, header_timeout };
        return serve(Store::open(&url)?, config);
    }
    let store = Store::open(&url)?;
    let session = store.session(ds);
    // The state a command writes to operational outlives the command.
    let writer = match ds {
        Datastore::Operational => store.session(ds).stored(),
        _ => store.session(ds),
    };
    match cli.command {
        Command::Get { path, depth, compact, with_defaults } => {
            let with_defaults = with_defaults.parse().map_err(UserError)?;
            print_json(&session, &path, ReadOptions { depth, with_defaults }, !compact, io::stdout().lock())?
        }
        Command::Schema { command: SchemaCommand::Add { files, search } } => {
            let modules = store.schema_add(&files, &search)?;
            let implemented = modules.iter().filter(|m| m.implemented).count();
            eprintln!(
                "schema: {} modules ({implemented} implemented, {} imported)",
                modules.len(),
                modules.len() - implemented
            );
        }
        Command::Schema { command: SchemaCommand::Validation { level: None } } => {
            println!("{}", store.validation()?)
        }
        Command::Schema { command: SchemaCommand::Validation { level: Some(level) } } => {
            store.set_validation(level.parse()?)?
        }
        Command::Schema { command: SchemaCommand::List } => {
            let mut out = io::stdout().lock();
            for m in store.schema_modules()? {
                let kind = if m.implemented { "implemented" } else { "import" };
                writeln!(out, "{}\t{}\t{kind}", m.name, m.revision.as_deref().unwrap_or("-"))?;
            }
        }
        Command::Export { path, compact } => {
            let progress = Progress::new("exporting", None, Unit::Bytes);
            print_json(&session, &path, ReadOptions::default(), !compact, progress.writer(io::stdout().lock()))?
        }
        Command::Count { query } => println!("{}", session.count(&query)?),
        Command::Set { path, value } => {
            let t = value.trim_start();
            let commit = if (t.starts_with('{') || t.starts_with('[')) && t.trim_end() != "[null]" {
                writer.set_json(&path, &value)?
            } else {
                writer.set(&path, Value::from_cli(&value))?
            };
            report(&commit);
        }
        Command::Delete { path } => report(&writer.delete(&path)?),
        Command::Push { pairs, file } => {
            if pairs.len() % 2 != 0 {
                return Err(UserError(format!(
                    "push takes PATH VALUE pairs; `{}` has no value",
                    pairs[pairs.len() - 1]
                ))
                .into());
            }
            if pairs.is_empty() && file.is_none() {
                return Err(UserError("push needs PATH VALUE pairs or --file FILE".into()).into());
            }
            if file.as_deref() == Some("-") {
                return Err(UserError("push --file cannot read stdin: stdin closing ends the push".into()).into());
            }
            let pushed = store.session(Datastore::Operational);
            let mut edits = Vec::new();
            for pair in pairs.chunks(2) {
                let path: canopy::Path = pair[0].parse().map_err(|e| UserError(format!("{e}")))?;
                edits.push(canopy::Edit::merge(path, canopy::Node::leaf(Value::from_cli(&pair[1]))));
            }
            if !edits.is_empty() {
                report(&pushed.apply(&edits)?);
            }
            if let Some(f) = file {
                report(&pushed.edit_json(Operation::Merge, "/", Some(&read_input(&f)?), None)?);
            }
            println!("pushed");
            io::stdout().flush()?;
            // Held until stdin closes; dropping the store then removes the state.
            io::copy(&mut io::stdin().lock(), &mut io::sink())?;
            drop(store);
            eprintln!("pushed state removed");
            return Ok(ExitCode::SUCCESS);
        }
        Command::Edit { file, op, path, insert } => {
            let op: Operation = op.parse()?;
            let doc = file.as_deref().map(read_input).transpose()?;
            let insert = insert.as_deref().map(parse_insert).transpose()?;
            let edited = writer.edit_json(op, &path, doc.as_deref(), insert);
            report(&edited.map_err(|e| in_file(e, file.as_deref().unwrap_or("-")))?);
        }
        Command::Import { file, replace, list, user_ordered } => {
            // Declared in the import's transaction: a failed import leaves none.
            let mut lists = Vec::new();
            for (spec, user_ordered) in list.iter().map(|s| (s, false)).chain(user_ordered.iter().map(|s| (s, true))) {
                let (schema_path, keys) = parse_list_spec(spec)?;
                lists.push((
                    schema_path.to_string(),
                    ListInfo { keys: keys.into_iter().map(Into::into).collect(), user_ordered },
                ));
            }
            let op = if replace { Operation::Replace } else { Operation::Merge };
            report(&import(&writer, &file, op, &lists)?);
        }
        Command::Compact => {
            let shown = store.url();
            let progress = Progress::spinner(&format!("compacting {shown}"));
            store.compact()?;
            drop(progress);
            eprintln!("compacted {shown}");
        }
        Command::Info => {
            let info = store.info()?;
            let sync = match info.sync {
                SyncMode::Commit => "commit",
                SyncMode::Off => "off",
            };
            println!("backend: {}", info.backend);
            println!("revision: {}", info.revision);
            println!("fragments: {}", info.fragments);
            println!("bytes on disk: {}", info.disk_bytes);
            println!("sync: {sync}");
        }
        Command::Copy { .. }
        | Command::Bench { .. }
        | Command::Serve { .. }
        | Command::User { .. }
        | Command::Watch { .. }
        | Command::Subscribe { .. }
        | Command::Provide { .. } => {
            unreachable!("handled before a store is opened or a session made")
        }
        Command::Datastore { op } => match op {
            DatastoreCommand::Copy { from, to } => {
                let from: Datastore = from.parse().map_err(UserError)?;
                let to: Datastore = to.parse().map_err(UserError)?;
                report(&store.copy_datastore(from, to)?);
            }
            DatastoreCommand::Commit => report(&store.commit_candidate()?),
            DatastoreCommand::Discard => {
                store.discard_candidate()?;
                eprintln!("candidate discarded: it reads as running");
            }
            DatastoreCommand::Status => {
                let modified = store.candidate_modified()?;
                println!("candidate: {}", if modified { "modified (uncommitted changes)" } else { "same as running" });
                for l in store.locks()? {
                    let place = if l.other_host { " on another host" } else { "" };
                    println!("lock: {} held by process {}{place}", l.datastore.name(), l.pid);
                }
            }
        },
        Command::Check => {
            let progress = Progress::new("checking", store.backend().approx_len()?, Unit::Records);
            let problems = store.check_with_progress(&mut |n| progress.set(n))?;
            drop(progress);
            if problems.is_empty() {
                println!("ok");
            } else {
                let mut out = io::stdout().lock();
                for p in &problems {
                    writeln!(out, "{p}")?;
                }
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `canopy bench`: Ctrl-C exits 130, bad arguments are user errors.
#[cfg(feature = "bench")]
fn bench(args: canopy_bench::BenchArgs) -> Result<ExitCode> {
    // The start-up probes run in fresh processes of this same binary.
    let probe = vec![std::env::current_exe()?.into_os_string(), "bench".into()];
    match canopy_bench::run(args, probe) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e @ canopy_bench::Error::Interrupted) => {
            eprintln!("canopy: {e}");
            Ok(ExitCode::from(130))
        }
        Err(canopy_bench::Error::Usage(message)) => Err(UserError(message).into()),
        Err(canopy_bench::Error::Failed(e)) => Err(e),
        Err(e) => Err(e.into()),
    }
}

/// `canopy serve`.
fn serve(store: Store, config: canopy_server::Config) -> Result<ExitCode> {
    let scheme = if config.tls.is_some() { "https" } else { "http" };
    let app = canopy_server::App::new(store, config).map_err(serve_error)?;
    canopy_server::serve_blocking(app, |addr| {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "listening on {scheme}://{addr}");
        let _ = out.flush();
    })
    .map_err(serve_error)?;
    Ok(ExitCode::SUCCESS)
}

/// The server's set-up errors are the user's (exit 1); the rest as they are.
fn serve_error(e: canopy_server::ServeError) -> anyhow::Error {
    use canopy_server::ServeError as S;
    match e {
        S::Config(_) | S::Users(_) | S::Tls(_) => UserError(e.to_string()).into(),
        e => e.into(),
    }
}

/// `canopy user add|token|remove`.
fn user(command: UserCommand) -> Result<ExitCode> {
    use canopy_server::{Access, Users};
    let load = |file: &std::path::Path| Users::load_or_empty(file).map_err(|e| UserError(e.to_string()));
    let checked = |name: &str, access: &str| -> Result<Access> {
        if !canopy_server::valid_name(name) {
            return Err(UserError(format!("name `{name}`: use letters, digits and . _ @ - (up to 128)")).into());
        }
        Ok(access.parse::<Access>().map_err(|e| UserError(format!("--access `{access}`: {e}")))?)
    };
    let saved = |users: &Users| users.save().map_err(|e| UserError(e.to_string()));
    match command {
        UserCommand::Add { file, name, access } => {
            let access = checked(&name, &access)?;
            let mut users = load(&file)?;
            let mut line = String::new();
            if io::IsTerminal::is_terminal(&io::stdin()) {
                eprint!("password for {name} (shown as typed): ");
            }
            io::stdin().read_line(&mut line).map_err(|e| UserError(format!("cannot read standard input: {e}")))?;
            let password = line.strip_suffix('\n').unwrap_or(&line);
            let password = password.strip_suffix('\r').unwrap_or(password);
            if password.is_empty() {
                return Err(UserError("no password: give it as the first line of standard input".into()).into());
            }
            let entry = canopy_server::user_entry(&name, password, access).map_err(|e| anyhow::anyhow!(e))?;
            let replaced = users.put(entry).map_err(UserError)?;
            saved(&users)?;
            let done = if replaced { "updated user" } else { "added user" };
            eprintln!("{done} {name} ({access}) in {}", file.display());
        }
        UserCommand::Token { file, name, access } => {
            let access = checked(&name, &access)?;
            let mut users = load(&file)?;
            let (token, entry) = canopy_server::new_token(&name, access);
            users.put(entry).map_err(UserError)?;
            saved(&users)?;
            println!("{token}");
            eprintln!("token {name} ({access}) stored in {} as its hash: it is shown only now", file.display());
        }
        UserCommand::Remove { file, name } => {
            let mut users = load(&file)?;
            if !users.remove(&name) {
                return Err(UserError(format!("{} has no user or token `{name}`", file.display())).into());
            }
            saved(&users)?;
            eprintln!("removed {name} from {}", file.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes what `query` selects as RFC 7951 JSON to `out`, ending with a newline.
fn print_json(session: &Session, query: &str, opts: ReadOptions, pretty: bool, mut out: impl Write) -> Result<()> {
    session.get_json(query, opts, pretty, &mut out)?;
    // The pretty form ends with a newline already.
    if !pretty {
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// The one-line summary of a write, on stderr.
fn report(commit: &Commit) {
    // An import that streamed lists no changes, but counts them.
    let n = commit.streamed.map_or(commit.changes.len(), |s| s.changes as usize);
    match n {
        0 => eprintln!("no changes (revision {})", commit.revision),
        1 => eprintln!("committed revision {}: 1 change", commit.revision),
        n => eprintln!("committed revision {}: {n} changes", commit.revision),
    }
}

/// The text of FILE, or of stdin for `-`.
fn read_input(file: &str) -> Result<String> {
    let mut bytes = Vec::new();
    let read = if file == "-" {
        io::stdin().read_to_end(&mut bytes)
    } else {
        File::open(file).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    read.map_err(|e| UserError(format!("cannot read {}: {e}", input_name(file))))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // Everything before the bad byte is UTF-8: count characters.
        let column = std::str::from_utf8(&valid[line_start..]).map_or(0, |t| t.chars().count()) + 1;
        UserError(format!(
            "cannot read {}: not UTF-8 text at line {line}, column {column} (byte {})",
            input_name(file),
            valid.len()
        ))
        .into()
    })
}

/// FILE as messages name it.
fn input_name(file: &str) -> String {
    if file == "-" {
        "standard input".into()
    } else {
        file.to_string()
    }
}

/// A reader that keeps its first I/O error, so that a read failure is
/// reported as one (naming the file), not as the JSON error it causes.
struct Tracked<R> {
    inner: R,
    failed: Option<io::Error>,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            if self.failed.is_none() {
                self.failed = Some(io::Error::new(e.kind(), e.to_string()));
            }
        })
    }
}

/// Imports FILE (or stdin) as a stream.
fn import(session: &Session<'_>, file: &str, op: Operation, lists: &[(String, ListInfo)]) -> Result<Commit> {
    let cannot = |e: io::Error| UserError(format!("cannot read {}: {e}", input_name(file)));
    let (input, size): (Box<dyn Read>, Option<u64>) = if file == "-" {
        (Box::new(io::stdin().lock()), None)
    } else {
        let f = File::open(file).map_err(cannot)?;
        let meta = f.metadata().map_err(cannot)?;
        if meta.is_dir() {
            return Err(UserError(format!("cannot read {file}: it is a directory")).into());
        }
        (Box::new(f), meta.is_file().then_some(meta.len()))
    };
    let progress = Progress::new(&format!("importing {}", input_name(file)), size, Unit::Bytes);
    let input = BufReader::with_capacity(1 << 16, progress.reader(input));
    let mut tracked = Tracked { inner: input, failed: None };
    match session.import_declared(&mut tracked, op, lists) {
        Err(e) => match tracked.failed {
            Some(io) => Err(cannot(io).into()),
            None => Err(in_file(e, file)),
        },
        Ok(commit) => Ok(commit),
    }
}

/// A JSON error in FILE with the file named in front (its line and column
/// are the file's); other errors as they are.
fn in_file(e: canopy::Error, file: &str) -> anyhow::Error {
    let json = matches!(e, canopy::Error::Data(canopy_core::Error::Json { .. }));
    let e = anyhow::Error::from(e);
    if json {
        e.context(input_name(file))
    } else {
        e
    }
}

/// `SCHEMA_PATH=K1,K2` of `--list` and `--user-ordered`.
fn parse_list_spec(spec: &str) -> Result<(&str, Vec<String>)> {
    let bad = || UserError(format!("list declaration `{spec}`: expected SCHEMA_PATH=KEY[,KEY...], e.g. /m:cont/lst=k"));
    let (path, keys) = spec.split_once('=').ok_or_else(bad)?;
    let keys: Vec<String> = keys.split(',').map(str::trim).map(String::from).collect();
    if !path.starts_with('/') || keys.iter().any(String::is_empty) {
        return Err(bad().into());
    }
    Ok((path, keys))
}

/// `first`, `last`, `before=K1,K2` or `after=K1,K2` of `--insert`.
fn parse_insert(text: &str) -> Result<Insert> {
    let keys = |k: &str| k.split(',').map(String::from).collect();
    Ok(match text.split_once('=') {
        None if text == "first" => Insert::First,
        None if text == "last" => Insert::Last,
        Some(("before", k)) if !k.is_empty() => Insert::Before(keys(k)),
        Some(("after", k)) if !k.is_empty() => Insert::After(keys(k)),
        _ => {
            return Err(UserError(format!(
                "--insert `{text}`: expected first, last, before=KEY[,KEY...] or after=KEY[,KEY...]"
            ))
            .into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn violation(i: usize) -> canopy::Violation {
        canopy::Violation { path: format!("/m:c/l[k='{i}']/v"), reason: format!("value {i} is not a uint8") }
    }

    #[test]
    fn a_long_refusal_is_a_screenful_of_lines() {
        let all: Vec<_> = (0..113).map(violation).collect();
        let text = list_violations(&all, MAX_LISTED);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + MAX_LISTED + 1, "{text}");
        assert!(lines[0].contains("113 problems"), "{}", lines[0]);
        assert_eq!(lines[1], "  /m:c/l[k='0']/v: value 0 is not a uint8");
        assert_eq!(lines[MAX_LISTED + 1], "  ... and 93 more");
        let few = list_violations(&all[..3], MAX_LISTED);
        assert_eq!(few.lines().count(), 4, "{few}");
        assert!(!few.contains("more"), "{few}");
        let long = canopy::Violation { path: "/p".into(), reason: "x".repeat(5000) };
        assert!(list_violations(&[long.clone(), long], MAX_LISTED).lines().all(|l| l.len() < 300));
    }
}
