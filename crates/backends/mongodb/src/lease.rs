//! Leases on MongoDB: a document per lease in collection `leases` of the
//! store's database, `{_id: ID, expires: date}`. `expires` is set from the
//! server's clock (`$$NOW` plus the lease's time) when the lease is taken,
//! and again a third of that time apart by a thread of the holder, on a
//! connection of its own. A lease is held while its `expires` is ahead of
//! the server's clock: a renewal matches only such a document (so a lease
//! that expired stays ended), and so does the query that asks which leases
//! are held. Every time is the server's, so the hosts' clocks do not matter.
//! A TTL index on `expires`, created with the store's first lease, deletes
//! the documents of expired leases (in the server's own time: MongoDB's TTL
//! monitor runs every 60 s), a backstop that keeps the collection small, not
//! what ends a lease.
//!
//! Dates are compared as numbers (`$toLong`): SecantusDB 0.7.0b3 compares
//! `$$NOW` equal to every date.

use std::sync::{Arc, Mutex};

use bson::{doc, Bson, Document};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::lease::{random_id, Lease, Renewal, RenewedLease};

use crate::{count, failure, first_batch, Conn, Failure, MongoBackend};

/// The filter of a lease whose time has not run out, by the server's clock.
fn unexpired() -> Document {
    doc! {"$expr": {"$gt": [{"$toLong": "$expires"}, {"$toLong": "$$NOW"}]}}
}

/// An update (a pipeline, to read `$$NOW`) that sets `expires` to the
/// server's time plus `ms` milliseconds.
fn extend(ms: i64) -> Bson {
    Bson::Array(vec![Bson::Document(doc! {"$set": {"expires": {"$add": ["$$NOW", ms]}}})])
}

impl MongoBackend {
    pub(crate) fn take_lease(&self) -> Result<Box<dyn Lease>> {
        let ms = self.lease_time.as_millis().max(1) as i64;
        let every = self.lease_time / 3;
        let mut conn = self.connect()?;
        // Created by the first lease of the store (nothing when it exists),
        // not at every open: a store whose processes never lock or push
        // keeps no `leases` collection for the server's TTL sweep to visit.
        let ttl = doc! {
            "createIndexes": "leases", "indexes": [{"key": {"expires": 1}, "name": "expires", "expireAfterSeconds": 0}],
            "$db": &self.db,
        };
        conn.command(&ttl).map_err(|f| self.fail("take a lease: create the index of `leases`", f))?;
        let mut taken = None;
        for _ in 0..8 {
            let id = random_id() as i64;
            // The query matches no document (every lease has `expires`), so
            // the upsert inserts `{_id: ID}` with its time, or fails as a
            // duplicate key when the id is taken.
            let take = doc! {
                "update": "leases",
                "updates": [{"q": {"_id": id, "expires": {"$exists": false}}, "u": extend(ms), "upsert": true}],
                "$db": &self.db,
            };
            match conn.command(&take) {
                Ok(_) => {
                    taken = Some(id);
                    break;
                }
                Err(Failure::Server { code: 11000, .. }) => {}
                Err(f) => return Err(self.fail("take a lease", f)),
            }
        }
        let Some(id) = taken else {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("{}: take a lease: every lease id tried was taken", self.place),
            ));
        };
        // One connection for the renewals and for the release at the end (a
        // new one when it broke); renewals that hang are given up before
        // the lease ends.
        let timeouts =
            conn.stream.set_read_timeout(Some(every)).and_then(|()| conn.stream.set_write_timeout(Some(every)));
        let shared = Arc::new(Mutex::new(timeouts.is_ok().then_some(conn)));
        let dial = Dial {
            addr: self.addr.clone(),
            place: self.place.clone(),
            db: self.db.clone(),
            connect_timeout: self.connect_timeout.min(every),
            timeout: every,
        };
        let (renew_conn, renew_dial) = (shared.clone(), dial.clone());
        let mut live = unexpired();
        live.insert("_id", id);
        let renewal = doc! {"update": "leases", "updates": [{"q": live, "u": extend(ms)}], "$db": &self.db};
        let renew = move || match renew_dial.command(&renew_conn, &renewal, "renew the lease") {
            Ok(reply) if count(&reply) == 1 => Renewal::Held,
            Ok(_) => Renewal::Lost,
            Err(e) => Renewal::Failed(e),
        };
        let end = move || {
            let delete = doc! {"delete": "leases", "deletes": [{"q": {"_id": id}, "limit": 1}], "$db": &dial.db};
            let _ = dial.command(&shared, &delete, "end the lease");
        };
        Ok(Box::new(RenewedLease::start(id as u64, self.lease_time, renew, end)?))
    }

    /// One `find` of the ids that are unexpired leases.
    pub(crate) fn held_leases(&self, ids: &[u64]) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // An id beyond 63 bits is no lease's.
        let asked: Vec<Bson> = ids.iter().filter_map(|id| i64::try_from(*id).ok()).map(Bson::Int64).collect();
        let mut filter = unexpired();
        filter.insert("_id", doc! {"$in": asked});
        let find = doc! {
            "find": "leases", "filter": filter, "projection": {"_id": 1},
            "batchSize": ids.len() as i64 + 1, "singleBatch": true,
        };
        let reply = self.outside("read the leases", find)?;
        let held: std::collections::HashSet<i64> = first_batch(&reply)
            .iter()
            .filter_map(|d| match d.get("_id")? {
                Bson::Int64(n) => Some(*n),
                Bson::Int32(n) => Some(i64::from(*n)),
                _ => None,
            })
            .collect();
        Ok(ids.iter().map(|id| i64::try_from(*id).is_ok_and(|i| held.contains(&i))).collect())
    }
}

/// What the lease's thread needs to reach the server.
#[derive(Clone)]
struct Dial {
    addr: String,
    place: String,
    db: String,
    /// At most a third of the lease's time, as is each command's.
    connect_timeout: std::time::Duration,
    /// Per command: a third of the lease's time.
    timeout: std::time::Duration,
}

impl Dial {
    /// Runs `cmd` on the lease's connection, connecting again when there is
    /// none (it broke); a connection that broke is let go.
    fn command(&self, shared: &Mutex<Option<Conn>>, cmd: &Document, what: &str) -> Result<Document> {
        let mut slot = shared.lock().unwrap_or_else(|p| p.into_inner());
        let mut conn = match slot.take() {
            Some(c) => c,
            None => Conn::open(&self.addr, self.connect_timeout, self.timeout).map_err(|e| {
                StoreError::new(
                    ErrorKind::Unavailable,
                    format!("{}: {what}: unreachable (cannot connect: {e})", self.place),
                )
            })?,
        };
        let reply = conn.command(cmd);
        if !conn.broken {
            *slot = Some(conn);
        }
        reply.map_err(|f| failure(&self.place, what, f))
    }
}
