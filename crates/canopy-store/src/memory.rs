//! An in-memory backend: the reference the conformance suite is checked against
//! and a store for tests. Snapshots are copy-on-write clones of the map.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

use crate::backend::{Backend, Batch, BatchOp, Snapshot};
use crate::error::{ErrorKind, Result, StoreError};

type Map = Arc<BTreeMap<Vec<u8>, Vec<u8>>>;

/// An in-memory ordered map. Nothing survives the process.
#[derive(Default)]
pub struct MemoryBackend {
    state: RwLock<(Map, u64)>,
}

impl MemoryBackend {
    pub fn new() -> MemoryBackend {
        MemoryBackend::default()
    }
}

/// A snapshot of an ordered map held in memory (shared by the in-memory and
/// the whole-file backends): a reference-counted map and the revision it is at.
pub struct MapSnapshot {
    pub map: Arc<BTreeMap<Vec<u8>, Vec<u8>>>,
    pub revision: u64,
}

impl Snapshot for MapSnapshot {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.map.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
        visit: &mut crate::backend::Visit<'_>,
    ) -> Result<()> {
        // An empty or inverted range holds nothing (and `BTreeMap::range` would panic on it).
        if end.is_some_and(|e| e <= start) {
            return Ok(());
        }
        let hi = end.map_or(Bound::Unbounded, Bound::Excluded);
        let range = self.map.range::<[u8], _>((Bound::Included(start), hi));
        if reverse {
            for (k, v) in range.rev() {
                if !visit(k, v)? {
                    break;
                }
            }
        } else {
            for (k, v) in range {
                if !visit(k, v)? {
                    break;
                }
            }
        }
        Ok(())
    }
}

impl Backend for MemoryBackend {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let g = self.state.read().map_err(|_| StoreError::new(ErrorKind::Unavailable, "memory store lock poisoned"))?;
        Ok(Box::new(MapSnapshot { map: g.0.clone(), revision: g.1 }))
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        let mut g =
            self.state.write().map_err(|_| StoreError::new(ErrorKind::Unavailable, "memory store lock poisoned"))?;
        if let Some(expect) = batch.expect_revision {
            if expect != g.1 {
                return Err(StoreError::new(
                    ErrorKind::Conflict,
                    format!("the store changed (revision {} , expected {expect})", g.1),
                ));
            }
        }
        // Changed in place when no snapshot shares the map (a reader's
        // snapshot keeps the map it was taken of: then it is copied).
        let map = Arc::make_mut(&mut g.0);
        for op in &batch.ops {
            match op {
                BatchOp::Put(k, v) => {
                    map.insert(k.clone(), v.clone());
                }
                BatchOp::Delete(k) => {
                    map.remove(k);
                }
                BatchOp::DeletePrefix(p) => {
                    let doomed: Vec<Vec<u8>> =
                        map.range(p.clone()..).take_while(|(k, _)| k.starts_with(p)).map(|(k, _)| k.clone()).collect();
                    for k in doomed {
                        map.remove(&k);
                    }
                }
            }
        }
        g.1 += 1;
        Ok(g.1)
    }
}
