//! The store's revision as this process hears it, for cached reads that
//! need no round trip to a database server.
//!
//! With `cache=on` on a backend that announces commits (the server backends),
//! a thread of the store listens to the announcements and keeps the newest
//! revision heard; this process's own commits raise it too. A cached read
//! whose tree and catalog are at that revision is answered from memory,
//! without a snapshot. A commit of another process is then seen once its
//! announcement arrives (on loopback well under the 10 ms the design allows),
//! and this process's own commits at once.
//!
//! What is heard is only trusted while it is known to be complete: the
//! listening connection must be up, and a revision read over another
//! connection (once a [`HEARTBEAT`]) must not stay ahead of what was heard.
//! After an error, a lost announcement or a heartbeat older than
//! [`TRUSTED_FOR`], every cached read reads the revision again, as without a
//! watch, until the connection is back and a revision read after it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use canopy_store::{Announcements, Backend};

/// How often the watch reads the revision to check that it heard every commit.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long after its last good heartbeat what the watch heard is trusted
/// (a server that stopped answering stops being trusted within this).
const TRUSTED_FOR: Duration = Duration::from_secs(3);
/// The wait before connecting again after a failure.
const RETRY: Duration = Duration::from_millis(200);

/// The newest revision of the store heard of, while it can be trusted.
pub(crate) struct Watch {
    state: Arc<State>,
}

struct State {
    /// The newest revision announced, read or committed by this process.
    heard: AtomicU64,
    /// Whether the listening connection is up and was up when the
    /// revision was last read.
    live: AtomicBool,
    /// When the revision was last read and found heard (ms since `epoch`).
    confirmed_ms: AtomicU64,
    epoch: Instant,
    /// Set when the store is dropped: the thread ends.
    stop: AtomicBool,
}

impl State {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Watch {
    /// Starts watching `backend`'s announcements; `None` when it makes none
    /// or the thread cannot start (cached reads then read the revision).
    pub(crate) fn start(backend: &Arc<dyn Backend>) -> Option<Watch> {
        if !backend.announces() {
            return None;
        }
        let state = Arc::new(State {
            heard: AtomicU64::new(0),
            live: AtomicBool::new(false),
            confirmed_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            stop: AtomicBool::new(false),
        });
        let listener = Listener { state: state.clone(), backend: Arc::downgrade(backend), announcements: None };
        std::thread::Builder::new().name("canopy-watch".into()).spawn(move || listener.run()).ok()?;
        Some(Watch { state })
    }

    /// The store's revision as last heard, when what is heard can be
    /// trusted; `None` when a read must ask the backend.
    pub(crate) fn revision(&self) -> Option<u64> {
        let s = &*self.state;
        if !s.live.load(Ordering::Acquire) {
            return None;
        }
        let confirmed = s.confirmed_ms.load(Ordering::Acquire);
        if s.now_ms().saturating_sub(confirmed) > TRUSTED_FOR.as_millis() as u64 {
            return None;
        }
        Some(s.heard.load(Ordering::Acquire))
    }

    /// This process committed `revision`.
    pub(crate) fn committed(&self, revision: u64) {
        self.state.heard.fetch_max(revision, Ordering::AcqRel);
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Release);
    }
}

struct Listener {
    state: Arc<State>,
    backend: Weak<dyn Backend>,
    announcements: Option<Box<dyn Announcements>>,
}

impl Listener {
    fn run(mut self) {
        let s = self.state.clone();
        // The newest revision announced on this connection, and a revision
        // read above it: still not announced by the next heartbeat, an
        // announcement was lost (every commit is announced, this process's
        // own too).
        let mut announced = 0;
        let mut unheard: Option<u64> = None;
        let mut last_read = Instant::now();
        while !s.stop.load(Ordering::Acquire) {
            if self.announcements.is_none() {
                s.live.store(false, Ordering::Release);
                unheard = None;
                // Commits up to the revision read at connecting are not announced.
                let Some(now) = self.connect() else {
                    std::thread::sleep(RETRY);
                    continue;
                };
                announced = now;
                last_read = Instant::now();
            }
            let mut read_now = last_read.elapsed() >= HEARTBEAT;
            let mut unsaid = false;
            match self.announcements.as_mut().map(|a| a.next(HEARTBEAT.saturating_sub(last_read.elapsed()))) {
                // A commit whose revision the message did not say.
                Some(Ok(Some(u64::MAX))) => (read_now, unsaid) = (true, true),
                Some(Ok(Some(r))) => {
                    announced = announced.max(r);
                    s.heard.fetch_max(r, Ordering::AcqRel);
                }
                Some(Ok(None)) => read_now = true,
                Some(Err(_)) | None => {
                    self.lose();
                    continue;
                }
            }
            if !read_now {
                continue;
            }
            let Some(now) = self.read_revision() else {
                self.lose();
                std::thread::sleep(RETRY);
                continue;
            };
            last_read = Instant::now();
            s.heard.fetch_max(now, Ordering::AcqRel);
            if unsaid {
                announced = announced.max(now);
            }
            if unheard.is_some_and(|r| announced < r) {
                // Announced commits went missing: listen again.
                self.lose();
                continue;
            }
            unheard = (now > announced).then_some(now);
            s.confirmed_ms.store(s.now_ms(), Ordering::Release);
        }
    }

    /// Listens again, then reads the revision (commits after that read are
    /// announced) and returns it: `None` when either fails.
    fn connect(&mut self) -> Option<u64> {
        let Some(backend) = self.backend.upgrade() else {
            self.state.stop.store(true, Ordering::Release);
            return None;
        };
        let a = backend.announcements().ok()?;
        drop(backend);
        self.announcements = Some(a);
        let Some(now) = self.read_revision() else {
            self.announcements = None;
            return None;
        };
        let s = &*self.state;
        s.heard.fetch_max(now, Ordering::AcqRel);
        s.confirmed_ms.store(s.now_ms(), Ordering::Release);
        s.live.store(true, Ordering::Release);
        Some(now)
    }

    fn read_revision(&self) -> Option<u64> {
        let backend = self.backend.upgrade()?;
        let revision = backend.snapshot().ok()?.revision();
        Some(revision)
    }

    fn lose(&mut self) {
        self.state.live.store(false, Ordering::Release);
        self.announcements = None;
    }
}
