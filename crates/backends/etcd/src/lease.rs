//! Leases on etcd: an etcd lease of the lease's time (whole seconds), with
//! a key `P/lease/ID` attached to it, kept alive by a thread of the holder
//! (`/v3/lease/keepalive`, a third of the time apart). etcd revokes a lease
//! that is not kept alive and deletes its key, so one range read of
//! `P/lease/` tells which leases are held. A lease that expired cannot be
//! kept alive again: it stays ended.

use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::lease::{random_id, Lease, Renewal, RenewedLease};
use serde_json::{json, Value};

use crate::{b64, field_bytes, field_i64, EtcdBackend};

impl EtcdBackend {
    fn lease_prefix(&self) -> Vec<u8> {
        format!("{}/lease/", self.prefix).into_bytes()
    }

    pub(crate) fn take_lease(&self) -> Result<Box<dyn Lease>> {
        let ttl = self.lease_time.as_secs_f64().ceil() as i64;
        let mut taken = None;
        for _ in 0..8 {
            let id = random_id();
            match self.call("take a lease", "lease/grant", &json!({ "TTL": ttl, "ID": id })) {
                Ok(_) => {
                    taken = Some(id);
                    break;
                }
                Err(e) if e.to_string().contains("lease already exists") => {}
                Err(e) => return Err(e),
            }
        }
        let Some(id) = taken else {
            return Err(StoreError::new(
                ErrorKind::Unavailable,
                format!("{}: take a lease: every lease id tried was taken", self.place),
            ));
        };
        let mut key = self.lease_prefix();
        key.extend_from_slice(id.to_string().as_bytes());
        let put = json!({ "key": b64(&key), "value": b64(b"1"), "lease": id.to_string() });
        if let Err(e) = self.call("take a lease", "kv/put", &put) {
            let _ = self.call("release a lease", "lease/revoke", &json!({ "ID": id }));
            return Err(e);
        }
        let agent = ureq::AgentBuilder::new().timeout(self.lease_time / 3).build();
        let (base, end_agent, end_base) = (self.base.clone(), agent.clone(), self.base.clone());
        let renew = move || match post(&agent, &base, "lease/keepalive", &json!({ "ID": id })) {
            Ok(reply) => match reply.get("result").and_then(|r| field_i64(r, "TTL")) {
                Some(t) if t > 0 => Renewal::Held,
                Some(_) => Renewal::Lost,
                None => Renewal::Failed(StoreError::new(ErrorKind::Io, format!("keepalive: {reply}"))),
            },
            Err(e) if e.contains("lease not found") => Renewal::Lost,
            Err(e) => Renewal::Failed(StoreError::new(ErrorKind::Unavailable, e)),
        };
        let end = move || {
            let _ = post(&end_agent, &end_base, "lease/revoke", &json!({ "ID": id }));
        };
        Ok(Box::new(RenewedLease::start(id, self.lease_time, renew, end)?))
    }

    pub(crate) fn held_leases(&self, ids: &[u64]) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = self.lease_prefix();
        let end = canopy_store::backend::prefix_end(&prefix).expect("the prefix ends in `/`");
        let reply = self.read(
            "read the leases",
            "kv/range",
            &json!({ "key": b64(&prefix), "range_end": b64(&end), "keys_only": true }),
        )?;
        let mut held = Vec::new();
        for kv in reply.get("kvs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
            let key = field_bytes(kv, "key").ok_or_else(|| self.damaged("read the leases"))?;
            let id = std::str::from_utf8(&key[prefix.len().min(key.len())..]).ok().and_then(|s| s.parse::<u64>().ok());
            held.extend(id);
        }
        Ok(ids.iter().map(|id| held.contains(id)).collect())
    }
}

/// One request of the renewal thread; the error is the server's message or
/// the transport's.
fn post(agent: &ureq::Agent, base: &str, endpoint: &str, body: &Value) -> std::result::Result<Value, String> {
    match agent
        .post(&format!("{base}/{endpoint}"))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string())
    {
        Ok(resp) => serde_json::from_reader(resp.into_reader()).map_err(|e| e.to_string()),
        Err(ureq::Error::Status(_, resp)) => Err(resp.into_string().unwrap_or_default()),
        Err(e) => Err(e.to_string()),
    }
}
