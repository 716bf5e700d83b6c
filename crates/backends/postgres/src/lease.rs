//! Leases on PostgreSQL: a session-level advisory lock, held by a connection
//! of its own while the process lives.
//!
//! The lease's identity is the lock's 64-bit key (random, positive). The
//! server releases a session's advisory locks when the session ends: when
//! the process is killed (its socket closes), when the connection breaks,
//! and, through `idle_session_timeout` set on that session to the lease's
//! time, when the holder stops pinging it (a host that vanished without
//! closing its socket). Whether a lease is held is read from `pg_locks`,
//! which shows every session's locks of the database to every user.

use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::lease::{random_id, Lease, Renewal, RenewedLease};

use crate::PostgresBackend;

impl PostgresBackend {
    pub(crate) fn take_lease(&self) -> Result<Box<dyn Lease>> {
        let mut conn = self.connect()?;
        let err = |e| self.err("take a lease", e);
        let ms = self.lease_time.as_millis().max(1);
        // PostgreSQL 14 and later; an older server keeps the session (and
        // the lease) of a vanished host until its TCP connection times out.
        let _ = conn.client.batch_execute(&format!("SET idle_session_timeout = {ms}"));
        let mut id = 0;
        for _ in 0..8 {
            let candidate = random_id();
            let key = i64::try_from(candidate).unwrap_or(i64::MAX);
            let row = conn.client.query_one("SELECT pg_try_advisory_lock($1)", &[&key]).map_err(err)?;
            if row.get::<_, bool>(0) {
                id = candidate;
                break;
            }
        }
        if id == 0 {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("{}: take a lease: every advisory lock tried was taken", self.place),
            ));
        }
        let mut client = conn.client;
        // The session ends with the thread's closure (the client is dropped):
        // the server releases the lock then.
        let lease = RenewedLease::start(
            id,
            self.lease_time,
            move || match client.simple_query("SELECT 1") {
                Ok(_) => Renewal::Held,
                // A broken session took its locks with it.
                Err(_) => Renewal::Lost,
            },
            || {},
        )?;
        Ok(Box::new(lease))
    }

    pub(crate) fn held_leases(&self, ids: &[u64]) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<i64> = ids.iter().map(|id| i64::try_from(*id).unwrap_or(-1)).collect();
        let held: Vec<i64> = self.with_conn(|conn| {
            let rows = conn
                .client
                .query(
                    "SELECT k FROM unnest($1::int8[]) AS k WHERE EXISTS (\
                       SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted \
                       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                       AND l.classid = (k >> 32)::oid AND l.objid = (k & 4294967295)::oid AND l.objsubid = 1)",
                    &[&keys],
                )
                .map_err(|e| self.err("read the leases", e))?;
            Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
        })?;
        Ok(keys.iter().map(|k| held.contains(k)).collect())
    }
}
