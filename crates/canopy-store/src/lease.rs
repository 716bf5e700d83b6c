//! Leases: how a process shows the others sharing a store on a database
//! server that it is alive (see [`crate::Backend::lease`]).
//!
//! A lease has an identity (a random 63-bit number, never reused) that the
//! engine writes into the records it ties to a process (datastore locks, the
//! connections that pushed operational state). The server keeps the lease
//! while its holder renews it; when the holder ends (killed, cut off from the
//! server longer than the lease's time), the server drops it, and every
//! process takes the records naming it for ended, on whatever host.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Result, StoreError};

/// How long a lease outlives its holder by default (URL parameter `lease`).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// A lease held on the server while this value lives; dropping it ends it
/// (the server drops it at once, not after its time).
pub trait Lease: Send + Sync {
    /// The lease's identity among the store's leases: positive, never reused.
    fn id(&self) -> u64;

    /// Whether the lease ended while its holder lives (the server dropped
    /// it: the holder could not renew it in time, or its connection broke).
    /// A lost lease never comes back: the records naming it are ended for
    /// every process, this one included.
    fn lost(&self) -> bool;
}

/// The lease time a store URL asks for (`lease=10s`, the default
/// [`DEFAULT_LEASE`]): from 1 s to 1 h.
///
/// # Errors
/// `InvalidUrl` for a value that is not a duration in that range.
pub fn lease_time(url: &crate::StoreUrl) -> Result<Duration> {
    let time = url.duration("lease", DEFAULT_LEASE)?;
    if time < Duration::from_secs(1) || time > Duration::from_secs(3600) {
        return Err(StoreError::new(
            crate::ErrorKind::InvalidUrl,
            format!("invalid store URL `{}`: lease must be from 1s to 1h, not {time:?}", url.redacted()),
        ));
    }
    Ok(time)
}

/// A random lease identity: 63 bits from the process's randomly keyed hasher
/// (seeded by the operating system), the clock and a counter.
pub fn random_id() -> u64 {
    use std::sync::atomic::AtomicU64;
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    h.write_u128(clock);
    // Positive as a signed 64-bit number (PostgreSQL's and etcd's ids), never 0.
    (h.finish() >> 1).max(1)
}

/// What one renewal found.
pub enum Renewal {
    /// The lease is held for another lease time.
    Held,
    /// The server no longer has it.
    Lost,
    /// The server could not be asked (it is tried again at the next renewal;
    /// the lease is lost when a whole lease time passes without one).
    Failed(StoreError),
}

/// A lease renewed by a thread of its own, a third of the lease's time
/// apart, until it is dropped (then `end` releases it on the server) or lost.
pub struct RenewedLease {
    id: u64,
    lost: Arc<AtomicBool>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RenewedLease {
    /// Starts renewing lease `id` (already granted on the server) with
    /// `renew`; `end` runs on the thread when the lease is dropped, not when
    /// it was lost.
    ///
    /// # Errors
    /// `Io` when the thread cannot be started.
    pub fn start(
        id: u64,
        time: Duration,
        mut renew: impl FnMut() -> Renewal + Send + 'static,
        end: impl FnOnce() + Send + 'static,
    ) -> Result<RenewedLease> {
        let lost = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel::<()>();
        let flag = lost.clone();
        let every = time / 3;
        let thread = std::thread::Builder::new()
            .name("canopy-lease".into())
            .spawn(move || {
                let mut renewed = Instant::now();
                loop {
                    match stopped.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return end(),
                    }
                    let asked = Instant::now();
                    match renew() {
                        Renewal::Held => renewed = asked,
                        Renewal::Failed(_) if renewed.elapsed() < time => {}
                        Renewal::Lost | Renewal::Failed(_) => {
                            flag.store(true, Ordering::SeqCst);
                            // Nothing left to renew; wait to be dropped.
                            let _ = stopped.recv();
                            return;
                        }
                    }
                }
            })
            .map_err(|e| StoreError::io("start the lease's renewal thread", e))?;
        Ok(RenewedLease { id, lost, stop: Some(stop), thread: Some(thread) })
    }
}

impl Lease for RenewedLease {
    fn id(&self) -> u64 {
        self.id
    }

    fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for RenewedLease {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_positive_and_differ() {
        let a = random_id();
        let b = random_id();
        assert!(a > 0 && b > 0 && a != b);
        assert!(i64::try_from(a).is_ok());
    }

    #[test]
    fn a_lease_is_lost_when_renewals_fail_for_its_time_and_ended_when_dropped() {
        let ended = Arc::new(AtomicBool::new(false));
        let e = ended.clone();
        let lease = RenewedLease::start(
            7,
            Duration::from_millis(30),
            || Renewal::Lost,
            move || e.store(true, Ordering::SeqCst),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !lease.lost() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(lease.lost());
        drop(lease);
        assert!(!ended.load(Ordering::SeqCst), "a lost lease is not released again");
        let e = ended.clone();
        let lease =
            RenewedLease::start(8, Duration::from_secs(60), || Renewal::Held, move || e.store(true, Ordering::SeqCst))
                .unwrap();
        assert!(!lease.lost());
        drop(lease);
        assert!(ended.load(Ordering::SeqCst));
    }
}
