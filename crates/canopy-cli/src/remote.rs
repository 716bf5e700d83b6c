//! The CLI's client verbs for `canopy serve`: watch, subscribe, provide.

use std::io::{self, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::Result;
use canopy_server::client::{self, Auth, Remote, RemoteEvent};

/// Credentials from the environment: `CANOPY_TOKEN`, or `CANOPY_USER` with
/// `CANOPY_PASSWORD`.
fn auth() -> Option<Auth> {
    let var = |n: &str| std::env::var(n).ok().filter(|s| !s.is_empty());
    if let Some(t) = var("CANOPY_TOKEN") {
        return Some(Auth::Bearer(t));
    }
    Some(Auth::Basic { user: var("CANOPY_USER")?, password: var("CANOPY_PASSWORD").unwrap_or_default() })
}

fn line(text: &str) -> bool {
    let mut out = io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).is_ok()
}

pub fn watch(server: &str, ds: &str, path: &str, since: Option<u64>) -> Result<ExitCode> {
    let path = (path != "/").then_some(path);
    client::watch(server, auth().as_ref(), ds, path, since, |ev| match ev.event.as_deref() {
        Some("resync") => line(&format!("{{\"resync\":{}}}", ev.data)),
        _ => line(&ev.data),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `cmd` by `sh -c` with `input` on stdin; `Err` with its stderr (or
/// exit status) unless it exits 0. Returns its stdout.
fn run(cmd: &str, args: &[&str], input: &str) -> Result<String, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .arg("sh")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running `{cmd}`: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input is fine.
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| format!("running `{cmd}`: {e}"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(match err.is_empty() {
        true => format!("`{cmd}` exited with {}", out.status),
        false => err,
    })
}

pub fn subscribe(
    server: &str,
    ds: &str,
    path: &str,
    priority: i32,
    timeout_ms: u64,
    validate: Option<&str>,
) -> Result<ExitCode> {
    let mut remote = Remote::connect(server, auth().as_ref())?;
    let validate = validate.map(str::to_string);
    let watching = validate.is_none();
    let handler = move |ev: &RemoteEvent| {
        let doc = serde_json::json!({
            "phase": ev.phase, "datastore": ev.datastore, "revision": ev.revision, "changes": ev.patch,
        })
        .to_string();
        line(&doc);
        match (&validate, ev.phase.as_str()) {
            (Some(cmd), "validate") => run(cmd, &[], &doc).map(drop),
            _ => Ok(()),
        }
    };
    // Without a command there is nothing to validate with: it only watches
    // (and needs only read access to the datastore).
    if watching {
        remote.observe(ds, path, handler)?;
    } else {
        remote.subscribe(ds, path, priority, Duration::from_millis(timeout_ms), handler)?;
    }
    eprintln!("subscribed to {path} in {ds}");
    remote.run()?;
    Ok(ExitCode::SUCCESS)
}

pub fn provide(server: &str, path: &str, cmd: &str, timeout_ms: u64) -> Result<ExitCode> {
    let mut remote = Remote::connect(server, auth().as_ref())?;
    let cmd = cmd.to_string();
    remote.provide(path, Duration::from_millis(timeout_ms), move |p: &str| run(&cmd, &[p], ""))?;
    eprintln!("providing {path}");
    remote.run()?;
    Ok(ExitCode::SUCCESS)
}
