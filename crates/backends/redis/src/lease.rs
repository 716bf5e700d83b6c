//! Leases on Redis: a key per lease, `{P}:lease:ID`, set with an expiry of
//! the lease's time and set again a third of that time apart by a thread of
//! the holder, on a connection of its own. The key expires when the holder
//! stops renewing it (killed, hung, cut off from the server): the lease is
//! then ended for every process. A renewal only sets a key that exists
//! (`XX`), so a lease that expired stays ended.

use std::time::Duration;

use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::lease::{random_id, Lease, Renewal, RenewedLease};
use redis::Connection;

use crate::RedisBackend;

impl RedisBackend {
    fn lease_key(&self, id: u64) -> String {
        format!("{}:lease:{id}", self.prefix)
    }

    pub(crate) fn take_lease(&self) -> Result<Box<dyn Lease>> {
        let ms = self.lease_time.as_millis().max(1) as u64;
        let mut conn = self.lease_connection()?;
        let mut taken = None;
        for _ in 0..8 {
            let id = random_id();
            let set: Option<String> = redis::cmd("SET")
                .arg(self.lease_key(id))
                .arg(1)
                .arg("PX")
                .arg(ms)
                .arg("NX")
                .query(&mut conn)
                .map_err(|e| self.err("take a lease", &e))?;
            if set.is_some() {
                taken = Some(id);
                break;
            }
        }
        let Some(id) = taken else {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("{}: take a lease: every lease key tried was taken", self.place),
            ));
        };
        let key = self.lease_key(id);
        let (client, timeouts) = (self.client.clone(), self.lease_time / 3);
        let mut conn = Some(conn);
        let renew_key = key.clone();
        // One connection for the renewals, and for the release at the end.
        let renew = move || {
            let c = match conn.take() {
                Some(c) => c,
                None => match lease_connection(&client, timeouts) {
                    Ok(c) => c,
                    Err(e) => return Renewal::Failed(StoreError::new(ErrorKind::Unavailable, e.to_string())),
                },
            };
            let mut c = c;
            let set: redis::RedisResult<Option<String>> =
                redis::cmd("SET").arg(&renew_key).arg(1).arg("PX").arg(ms).arg("XX").query(&mut c);
            match set {
                Ok(Some(_)) => {
                    conn = Some(c);
                    Renewal::Held
                }
                Ok(None) => Renewal::Lost,
                Err(e) => Renewal::Failed(StoreError::new(ErrorKind::Unavailable, e.to_string())),
            }
        };
        let (client, end_key) = (self.client.clone(), key);
        let end = move || {
            if let Ok(mut c) = lease_connection(&client, timeouts) {
                let _ = redis::cmd("DEL").arg(&end_key).query::<()>(&mut c);
            }
        };
        Ok(Box::new(RenewedLease::start(id, self.lease_time, renew, end)?))
    }

    fn lease_connection(&self) -> Result<Connection> {
        lease_connection(&self.client, self.lease_time / 3).map_err(|e| self.err("take a lease", &e))
    }

    pub(crate) fn held_leases(&self, ids: &[u64]) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|id| self.lease_key(*id)).collect();
        let found: Vec<Option<String>> = self.reading("read the leases", |c| redis::cmd("MGET").arg(&keys).query(c))?;
        Ok(found.iter().map(Option::is_some).collect())
    }
}

/// A connection whose commands time out within `timeout` (a third of the
/// lease's time: a renewal that hangs is given up before the lease ends).
fn lease_connection(client: &redis::Client, timeout: Duration) -> redis::RedisResult<Connection> {
    let conn = client.get_connection_with_timeout(timeout)?;
    conn.set_read_timeout(Some(timeout))?;
    conn.set_write_timeout(Some(timeout))?;
    Ok(conn)
}
