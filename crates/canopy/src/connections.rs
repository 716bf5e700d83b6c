//! Connections and the datastore-level records of a revision: who a
//! connection is (unique across the processes of one machine) and whether it
//! is still alive, the connections that pushed operational state, and
//! [`Control`]: locks, the candidate's state and the pushers, as one revision
//! holds them.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, Snapshot};

use crate::error::Result;

/// A connection's identity: unique across the processes of one machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Conn {
    pub id: u64,
    pub pid: u32,
    pub start: u64,
}

static LIVE: OnceLock<Mutex<BTreeSet<u64>>> = OnceLock::new();

fn live() -> std::sync::MutexGuard<'static, BTreeSet<u64>> {
    LIVE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

impl Conn {
    pub fn new() -> Conn {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let c = Conn { id: NEXT.fetch_add(1, Ordering::Relaxed), pid: std::process::id(), start: process_start(None) };
        live().insert(c.id);
        c
    }

    pub fn close(&self) {
        live().remove(&self.id);
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(20);
        v.extend_from_slice(&self.pid.to_be_bytes());
        v.extend_from_slice(&self.start.to_be_bytes());
        v.extend_from_slice(&self.id.to_be_bytes());
        v
    }

    fn decode(v: &[u8]) -> Option<Conn> {
        (v.len() == 20).then(|| Conn {
            pid: u32::from_be_bytes(v[0..4].try_into().expect("4 bytes")),
            start: u64::from_be_bytes(v[4..12].try_into().expect("8 bytes")),
            id: u64::from_be_bytes(v[12..20].try_into().expect("8 bytes")),
        })
    }

    /// Whether the connection still exists: its process runs (the same
    /// process, not a later one with its number, and not a zombie) and, in
    /// this process, it is not closed. When the process cannot be inspected
    /// (no /proc, or no permission) it counts as alive: records of a live
    /// connection are never taken for stale.
    pub fn alive(&self) -> bool {
        if self.in_this_process() {
            return live().contains(&self.id);
        }
        // Without a readable /proc here nothing can be judged: alive.
        if cfg!(target_os = "linux") && process_start(None) != 0 {
            return match process_status(self.pid) {
                Process::Gone => false,
                // A record without a start time (its writer had no /proc) is
                // the process of that number while one runs.
                Process::Running { start } => self.start == 0 || start == self.start,
                Process::Unknown => true,
            };
        }
        true
    }

    /// Whether the connection belongs to this process.
    pub fn in_this_process(&self) -> bool {
        self.pid == std::process::id() && self.start == process_start(None)
    }

    pub fn describe(&self, me: &Conn) -> String {
        if self == me {
            "this connection".into()
        } else if self.pid == me.pid {
            "another connection of this process".into()
        } else {
            format!("a connection of process {}", self.pid)
        }
    }
}

/// What /proc says about a process.
enum Process {
    /// It runs (or sleeps, or is stopped), started at `start` (clock ticks since boot).
    Running { start: u64 },
    /// It does not exist, or it exited and only its zombie waits to be reaped.
    Gone,
    /// Its status cannot be read (no /proc, no permission, an unexpected format).
    Unknown,
}

fn read_status(pid: &str) -> Process {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Process::Gone,
        Err(e) if e.raw_os_error() == Some(3) => return Process::Gone, // ESRCH: it exited while read
        Err(_) => return Process::Unknown,
    };
    // The command name (field 2) may hold spaces: count after its ')'.
    let Some((_, rest)) = stat.rsplit_once(')') else { return Process::Unknown };
    let mut fields = rest.split_whitespace();
    let state = fields.next();
    if matches!(state, Some("Z") | Some("X") | Some("x")) {
        return Process::Gone;
    }
    match fields.nth(18).and_then(|s| s.parse().ok()) {
        Some(start) => Process::Running { start },
        None => Process::Unknown,
    }
}

fn process_status(pid: u32) -> Process {
    read_status(&pid.to_string())
}

/// The start time of a process (clock ticks since boot, /proc/PID/stat field
/// 22), 0 when unknown. Tells a process from a later one with its number.
fn process_start(pid: Option<u32>) -> u64 {
    let start = |p: Process| match p {
        Process::Running { start } => start,
        _ => 0,
    };
    match pid {
        Some(p) => start(process_status(p)),
        None => {
            static ME: OnceLock<u64> = OnceLock::new();
            *ME.get_or_init(|| start(read_status("self")))
        }
    }
}

/// A connection that pushed operational state, as its record in the store says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pusher {
    pub conn: Conn,
    /// When it first pushed (nanoseconds since the Unix epoch).
    pub since: u64,
}

impl Pusher {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(9);
        v.push(keys::PUSHER_VERSION);
        v.extend_from_slice(&self.since.to_be_bytes());
        v
    }

    /// Decodes a pusher record; `None` for a damaged or unknown one, which is
    /// then never read (and never collected).
    fn decode(k: &[u8], v: &[u8]) -> Option<Pusher> {
        let conn = Conn::decode(k.get(keys::PUSHER.len()..)?)?;
        match v {
            [keys::PUSHER_VERSION, since @ ..] if since.len() == 8 => {
                Some(Pusher { conn, since: u64::from_be_bytes(since.try_into().ok()?) })
            }
            _ => None,
        }
    }
}

pub(crate) fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Adds to `batch` the deletion of every record of a pusher that ended.
pub(crate) fn collect_ended_pushers(control: &Control, batch: &mut Batch) {
    for p in &control.pushers {
        if !p.conn.alive() {
            let c = p.conn.encode();
            batch.delete(keys::pusher_key(&c));
            batch.delete_prefix(keys::pushed_prefix(&c));
        }
    }
}

/// Datastore-level records of a revision: locks, the candidate's state and
/// the connections that pushed operational state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Control {
    pub locks: Vec<(Datastore, Conn)>,
    pub candidate_modified: bool,
    /// In merge order: by first push, then by connection identity.
    pub pushers: Vec<Pusher>,
}

impl Control {
    pub fn load(snap: &dyn Snapshot) -> Result<Control> {
        let mut locks = Vec::new();
        snap.scan_prefix(keys::LOCK, false, &mut |k, v| {
            if let (Some(ds), Some(c)) =
                (k.get(keys::LOCK.len()).and_then(|&b| Datastore::from_code(b)), Conn::decode(v))
            {
                locks.push((ds, c));
            }
            Ok(true)
        })?;
        let mut pushers = Vec::new();
        snap.scan_prefix(keys::PUSHER, false, &mut |k, v| {
            pushers.extend(Pusher::decode(k, v));
            Ok(true)
        })?;
        // Keys come in identity order; the sort keeps it among equal times.
        pushers.sort_by_key(|p| p.since);
        Ok(Control { locks, candidate_modified: snap.get(keys::CANDIDATE)?.is_some(), pushers })
    }

    /// The live connection holding `ds`'s lock.
    pub fn holder(&self, ds: Datastore) -> Option<Conn> {
        self.locks.iter().find(|(d, c)| *d == ds && c.alive()).map(|(_, c)| *c)
    }

    /// The datastore whose contents `ds` reads.
    pub fn read_ds(&self, ds: Datastore) -> Datastore {
        match ds {
            Datastore::Candidate if !self.candidate_modified => Datastore::Running,
            d => d,
        }
    }
}

/// A lock as [`Store::locks`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    pub datastore: Datastore,
    /// The process holding it.
    pub pid: u32,
    /// Whether this connection holds it.
    pub mine: bool,
}

pub(crate) fn discard_ops(batch: &mut Batch) {
    batch.delete_prefix(keys::data_prefix(Datastore::Candidate));
    batch.delete_prefix(keys::order_prefix(Datastore::Candidate));
    batch.delete(keys::CANDIDATE.to_vec());
}
