//! Connections and the datastore-level records of a revision: who a
//! connection is (its host, its process and, on a store shared through a
//! database server, the lease of its process) and whether it is still alive,
//! the connections that pushed operational state, and [`Control`]: locks, the
//! candidate's state and the pushers, as one revision holds them.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use canopy_store::keys::{self, Datastore};
use canopy_store::{Backend, Batch, Snapshot};

use crate::error::Result;
use crate::hub::Hub;

/// A connection's identity: its host, its process on that host (id and
/// start time) and a counter of the process, unique across hosts; and the
/// lease of its process when the store keeps leases (0 otherwise). Equal
/// identities are the same connection whatever lease they name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Conn {
    pub id: u64,
    pub pid: u32,
    pub start: u64,
    /// [`this_host`] of the connection's host.
    pub host: u64,
    pub lease: u64,
    /// Read from a record of the first layout (20 bytes: no host, no
    /// lease), written by an older canopy on this host; it is written back
    /// (deleted) in that form.
    legacy: bool,
}

impl PartialEq for Conn {
    fn eq(&self, other: &Conn) -> bool {
        (self.id, self.pid, self.start, self.host) == (other.id, other.pid, other.start, other.host)
    }
}

impl Eq for Conn {}

/// The version tag of a connection record with host and lease.
const CONN_RECORD: u8 = 1;
const CONN_LEN: usize = 37;
const LEGACY_LEN: usize = 20;

/// The environment variable that names this host instead of its host name
/// and process namespace: for tests that play several hosts on one.
pub const HOST_ID_VAR: &str = "CANOPY_HOST_ID";

/// This host's identity in connection records: a hash of `CANOPY_HOST_ID`
/// when set, else of the host name and the process-id namespace (processes
/// of two containers of one machine may have the same numbers: they are two
/// hosts here).
pub(crate) fn this_host() -> u64 {
    static HOST: OnceLock<u64> = OnceLock::new();
    *HOST.get_or_init(|| {
        let name = match std::env::var(HOST_ID_VAR) {
            Ok(id) if !id.is_empty() => format!("id {id}"),
            _ => {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .or_else(|_| std::fs::read_to_string("/etc/hostname"))
                    .unwrap_or_default();
                let ns = std::fs::read_link("/proc/self/ns/pid").map(|p| p.to_string_lossy().into_owned());
                format!("host {} {}", host.trim(), ns.unwrap_or_default())
            }
        };
        name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    })
}

static LIVE: OnceLock<Mutex<BTreeSet<u64>>> = OnceLock::new();

fn live() -> std::sync::MutexGuard<'static, BTreeSet<u64>> {
    LIVE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

impl Conn {
    pub fn new() -> Conn {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let c = Conn {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            pid: std::process::id(),
            start: process_start(None),
            host: this_host(),
            lease: 0,
            legacy: false,
        };
        live().insert(c.id);
        c
    }

    pub fn close(&self) {
        live().remove(&self.id);
    }

    /// The record form: a version byte, the host, the lease, the process id
    /// and start time, the counter (37 bytes, big-endian). Records of one
    /// length and version never prefix each other, so a connection's
    /// pushed-state range holds no other's.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(CONN_LEN);
        if !self.legacy {
            v.push(CONN_RECORD);
            v.extend_from_slice(&self.host.to_be_bytes());
            v.extend_from_slice(&self.lease.to_be_bytes());
        }
        v.extend_from_slice(&self.pid.to_be_bytes());
        v.extend_from_slice(&self.start.to_be_bytes());
        v.extend_from_slice(&self.id.to_be_bytes());
        v
    }

    fn decode(v: &[u8]) -> Option<Conn> {
        let u64_at = |at: usize| u64::from_be_bytes(v[at..at + 8].try_into().expect("8 bytes"));
        let (host, lease, rest, legacy) = match v.len() {
            CONN_LEN if v[0] == CONN_RECORD => (u64_at(1), u64_at(9), &v[17..], false),
            // Pids stay below 2^22: a first-layout record starts with 0.
            LEGACY_LEN if v[0] == 0 => (this_host(), 0, v, true),
            _ => return None,
        };
        Some(Conn {
            pid: u32::from_be_bytes(rest[0..4].try_into().expect("4 bytes")),
            start: u64::from_be_bytes(rest[4..12].try_into().expect("8 bytes")),
            id: u64::from_be_bytes(rest[12..20].try_into().expect("8 bytes")),
            host,
            lease,
            legacy,
        })
    }

    /// Whether the connection's process still runs, asked of this host's
    /// /proc (the same process, not a later one with its number, and not a
    /// zombie). When the process cannot be inspected (no /proc, or no
    /// permission) it counts as alive: records of a live connection are
    /// never taken for stale.
    fn process_alive(&self) -> bool {
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
        self.host == this_host() && self.pid == std::process::id() && self.start == process_start(None)
    }

    pub fn describe(&self, me: &Conn) -> String {
        if self == me {
            "this connection".into()
        } else if self.in_this_process() {
            "another connection of this process".into()
        } else if self.host == this_host() {
            format!("a connection of process {}", self.pid)
        } else {
            format!("a connection of process {} on another host", self.pid)
        }
    }
}

/// How long an answer "that lease is held" is trusted before the server is
/// asked again (an ended lease never comes back: that answer is kept).
const HELD_ANSWER: Duration = Duration::from_secs(1);

/// For each of `conns`, whether it is alive, as this process of the store
/// whose backend and hub these are sees it: a connection of this process
/// while it is open (and, on a store with leases, while the lease it names
/// is this process's and not lost); another process's, on a store with
/// leases, while the server holds its lease, whatever host it is on;
/// without leases, while its process runs when it is on this host, and
/// always when it is on another (nothing here can tell: its records are
/// never taken for stale). One round trip at most, for the leases not asked
/// about within [`HELD_ANSWER`].
///
/// # Errors
/// The backend's, asking about leases.
pub(crate) fn judge(backend: &dyn Backend, hub: &Hub, conns: &[Conn]) -> Result<Vec<bool>> {
    let leases = backend.leases();
    let mut out = vec![true; conns.len()];
    let mut ask: Vec<u64> = Vec::new();
    let own = if leases { hub.lease_state() } else { None };
    {
        let answers = hub.lease_answers.lock().unwrap_or_else(|p| p.into_inner());
        for (i, c) in conns.iter().enumerate() {
            out[i] = if c.in_this_process() {
                live().contains(&c.id) && (c.lease == 0 || own == Some((c.lease, false)))
            } else if c.lease != 0 && leases {
                match answers.get(&c.lease) {
                    Some((false, _)) => false,
                    Some((true, at)) if at.elapsed() < HELD_ANSWER => true,
                    _ => {
                        ask.push(c.lease);
                        true
                    }
                }
            } else if c.host == this_host() {
                c.process_alive()
            } else {
                true
            };
        }
    }
    if ask.is_empty() {
        return Ok(out);
    }
    ask.sort_unstable();
    ask.dedup();
    let held = backend.leases_held(&ask)?;
    let mut answers = hub.lease_answers.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    let by_id: HashMap<u64, bool> = ask.iter().copied().zip(held.iter().copied()).collect();
    for (id, h) in &by_id {
        answers.insert(*id, (*h, now));
    }
    for (i, c) in conns.iter().enumerate() {
        if let Some(h) = by_id.get(&c.lease).filter(|_| !c.in_this_process() && c.lease != 0) {
            out[i] = *h;
        }
    }
    Ok(out)
}

/// This connection as the records it writes name it: with the lease of
/// this process on a store that keeps leases, taken when first needed (a
/// process that never locks or pushes holds none). A lease found lost is
/// replaced; the state pushed under it is gone for every process, so this
/// process's copy of it is dropped too.
///
/// # Errors
/// The backend's, taking a lease.
pub(crate) fn leased(me: Conn, backend: &dyn Backend, hub: &Hub) -> Result<Conn> {
    if !backend.leases() {
        return Ok(me);
    }
    let mut lease = hub.lease.lock().unwrap_or_else(|p| p.into_inner());
    let lost = lease.as_ref().is_some_and(|l| l.lost());
    if lost {
        *lease = None;
    }
    let id = match &*lease {
        Some(l) => l.id(),
        None => lease.insert(backend.lease()?).id(),
    };
    drop(lease);
    // (Not under the lease's lock: readers take the two the other way.)
    if lost {
        hub.pushed.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
    Ok(Conn { lease: id, ..me })
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

    /// As [`Control::live`] for the locks alone (pushers are not asked about).
    ///
    /// # Errors
    /// As [`Control::live`].
    pub fn live_locks(&self, backend: &dyn Backend, hub: &Hub) -> Result<Live> {
        Control { locks: self.locks.clone(), candidate_modified: false, pushers: Vec::new() }.live(backend, hub)
    }

    /// Which of the records name live connections, now (see [`judge`]).
    ///
    /// # Errors
    /// The backend's, asking about leases.
    pub fn live(&self, backend: &dyn Backend, hub: &Hub) -> Result<Live> {
        let mut live = Live::default();
        if self.locks.is_empty() && self.pushers.is_empty() {
            return Ok(live);
        }
        let conns: Vec<Conn> = self.locks.iter().map(|(_, c)| *c).chain(self.pushers.iter().map(|p| p.conn)).collect();
        let alive = judge(backend, hub, &conns)?;
        let (locks, pushers) = alive.split_at(self.locks.len());
        for (l, a) in self.locks.iter().zip(locks) {
            if *a {
                live.locks.push(*l);
            } else {
                live.ended_locks.push(l.0);
            }
        }
        for (p, a) in self.pushers.iter().zip(pushers) {
            if *a {
                live.pushers.push(*p);
            } else {
                live.ended_pushers.push(p.conn);
            }
        }
        Ok(live)
    }

    /// The datastore whose contents `ds` reads.
    pub fn read_ds(&self, ds: Datastore) -> Datastore {
        match ds {
            Datastore::Candidate if !self.candidate_modified => Datastore::Running,
            d => d,
        }
    }
}

/// The records of a [`Control`] split by whether their connections live.
#[derive(Debug, Default)]
pub(crate) struct Live {
    pub locks: Vec<(Datastore, Conn)>,
    pub ended_locks: Vec<Datastore>,
    /// In merge order.
    pub pushers: Vec<Pusher>,
    pub ended_pushers: Vec<Conn>,
}

impl Live {
    /// The live connection holding `ds`'s lock.
    pub fn holder(&self, ds: Datastore) -> Option<Conn> {
        self.locks.iter().find(|(d, _)| *d == ds).map(|(_, c)| *c)
    }

    /// Adds to `batch` the deletion of every record of a pusher that ended.
    pub fn collect_ended_pushers(&self, batch: &mut Batch) {
        for conn in &self.ended_pushers {
            let c = conn.encode();
            batch.delete(keys::pusher_key(&c));
            batch.delete_prefix(keys::pushed_prefix(&c));
        }
    }
}

/// A lock as [`Store::locks`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    pub datastore: Datastore,
    /// The process holding it (on its host).
    pub pid: u32,
    /// Whether the holder runs on another host than this process (a store
    /// on a database server).
    pub other_host: bool,
    /// Whether this connection holds it.
    pub mine: bool,
}

pub(crate) fn discard_ops(batch: &mut Batch) {
    batch.delete_prefix(keys::data_prefix(Datastore::Candidate));
    batch.delete_prefix(keys::order_prefix(Datastore::Candidate));
    batch.delete_prefix(keys::leafref_index_prefix(Datastore::Candidate));
    batch.delete(keys::leafrefs_key(Datastore::Candidate));
    batch.delete(keys::CANDIDATE.to_vec());
}
