//! `canopy bench` as a command: its arguments (a clap [`BenchArgs`] that the
//! CLI flattens into its `bench` subcommand), the one entry point [`run`], and
//! the errors it ends with.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::runner::{self, Format, Mode};

/// The arguments of `canopy bench`.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// The suite to run: sysrepo, keyset, objects, cps, rpm, server (canopy
    /// serve under concurrent HTTP clients), or all of them.
    #[arg(value_name = "SUITE|all")]
    pub suite: Option<String>,
    /// The backends to run on, comma-separated: lmdb, sqlite, snapshot, json,
    /// memory (default: every embedded one, lmdb first). Each may carry store
    /// URL options after `?`, joined by `&` (`lmdb?sync=off`,
    /// `sqlite?sync=off&cache=on`); the same backend may be given again with
    /// other options, and each table is labelled with the whole entry.
    #[arg(long, value_name = "BACKEND[?OPTIONS],...")]
    pub backends: Option<String>,
    /// Data set sizes: N[,N...], `small` (each suite's smallest, for CI) or
    /// `seed` (the seed document's sizes).
    #[arg(long, value_name = "N[,N...]|small|seed", default_value = "seed")]
    pub size: String,
    /// How the suite reaches the store: `in-process` (the library, the
    /// default) or `http` (`canopy serve` as a child process on loopback,
    /// driven through its REST API; the cps suite only).
    #[arg(long, value_enum, value_name = "in-process|http", default_value = "in-process")]
    pub mode: Mode,
    /// Measured runs of each row, after one warm-up run (default: the suite's).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// What stdout gets: the markdown tables, or JSON with every sample.
    #[arg(long, value_enum, value_name = "md|json", default_value = "md")]
    pub format: Format,
    /// Also write SUITE.md, SUITE.json and SUITE.svg into DIR, rewritten after
    /// each table (a run stopped later keeps what it measured).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// The arguments of a start-up probe (`bench __probe …`, which the objects
    /// suite starts in a fresh process).
    #[arg(hide = true, value_name = "PROBE_ARGS")]
    pub probe_args: Vec<String>,
}

/// `canopy-bench`'s own command line: [`BenchArgs`] alone.
#[derive(clap::Parser, Debug)]
#[command(name = "canopy-bench", about = "Run canopy's benchmark suites in temporary stores and print their tables.")]
pub struct BenchCommand {
    #[command(flatten)]
    pub args: BenchArgs,
}

/// How `canopy bench` fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad arguments: an unknown suite or backend, refused store options, a
    /// malformed size (the CLI exits 1).
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C stopped the run; the temporary stores were removed.
    #[error("interrupted; temporary stores removed")]
    Interrupted,
    /// A store, file or probe error during the run.
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// Runs `canopy bench`: parses what clap left as text (suite, backends and
/// their options, sizes), runs the suites, prints their tables (or JSON) on
/// stdout and writes the reports into `--out`.
///
/// `probe` is the command that starts a start-up probe: a program and leading
/// arguments to which `__probe …` is appended (the CLI passes its own binary
/// and `bench`); the probe process lands here again.
///
/// Ctrl-C stops the run at the next measured step and removes the temporary
/// stores ([`Error::Interrupted`]); a second Ctrl-C exits at once.
///
/// # Errors
/// [`Error::Usage`] for bad arguments, [`Error::Interrupted`] after Ctrl-C,
/// [`Error::Failed`] for anything else.
pub fn run(args: BenchArgs, probe: Vec<OsString>) -> Result<(), Error> {
    if args.suite.as_deref() == Some(crate::probe::ARG) {
        return Ok(crate::probe::main(&args.probe_args)?);
    }
    let o = runner::Options::from_args(args, probe).map_err(|e| Error::Usage(format!("{e:#}")))?;
    runner::install_sigint();
    match run_options(&o) {
        // A probe process killed by the same Ctrl-C fails its row: still an interrupt.
        Err(e) if runner::interrupted() || e.chain().any(|c| c.is::<runner::Interrupted>()) => Err(Error::Interrupted),
        other => Ok(other?),
    }
}

fn run_options(o: &runner::Options) -> anyhow::Result<()> {
    if let Some(out) = &o.out {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    let mut json = Vec::new();
    for suite in &o.suites {
        // The reports in --out are rewritten after each table: a run stopped
        // later keeps what it measured.
        let report = runner::run_suite_with(suite, o, |r| match &o.out {
            Some(out) => runner::write_reports(out, r),
            None => Ok(()),
        })?;
        match o.format {
            Format::Md => {
                println!("{}", report.to_markdown());
                let _ = std::io::stdout().flush();
            }
            Format::Json => json.push(report.to_json()),
        }
    }
    if o.format == Format::Json {
        let v = if json.len() == 1 { json.remove(0) } else { serde_json::Value::Array(json) };
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    Ok(())
}
