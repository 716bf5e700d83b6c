//! The per-revision catalog: what a revision of the store says besides its
//! data (the lists it knows, the compiled YANG schema, locks, the candidate's
//! state, the connections that pushed state), read from one snapshot and
//! swapped as one unit, so that no operation checks a path against one
//! revision's schema and reads data of another.

use std::sync::{Arc, RwLock};

use canopy_core::Schemaless;
use canopy_store::Snapshot;
use canopy_yang::YangSchema;

use crate::connections::Control;
use crate::error::{Error, Result};
use crate::yang::Validation;

/// Everything but data, as of `revision`.
pub(crate) struct Catalog {
    pub revision: u64,
    /// Lists with their keys and ordering: learned or declared ones, and the
    /// YANG schema's.
    pub lists: Arc<Schemaless>,
    pub yang: Option<Arc<YangSchema>>,
    /// How much of `yang` commits are checked against.
    pub validation: Validation,
    pub control: Arc<Control>,
    /// The YANG module records `yang` was compiled from (compared when the
    /// revision moves, so that other processes' data commits do not
    /// recompile it).
    records: Arc<Vec<u8>>,
}

/// The catalog of the newest revision this store has seen.
pub(crate) struct Catalogs {
    current: RwLock<Arc<Catalog>>,
}

fn poisoned() -> Error {
    Error::Store(canopy_store::StoreError::new(canopy_store::ErrorKind::Unavailable, "catalog lock poisoned"))
}

impl Catalogs {
    /// A catalog of no revision: the first [`Catalogs::at`] reads one.
    pub fn new() -> Catalogs {
        Catalogs {
            current: RwLock::new(Arc::new(Catalog {
                revision: u64::MAX,
                lists: Arc::new(Schemaless::default()),
                yang: None,
                validation: Validation::Full,
                control: Arc::new(Control::default()),
                records: Arc::new(Vec::new()),
            })),
        }
    }

    /// The catalog of `snap`'s revision: the one held when it is that
    /// revision's, else read from `snap` (reusing the compiled schema when the
    /// module records did not change) and held from then on.
    ///
    /// # Errors
    /// Backend errors, damaged records, modules that no longer compile.
    pub fn at(&self, snap: &dyn Snapshot) -> Result<Arc<Catalog>> {
        let held = self.current.read().map_err(|_| poisoned())?.clone();
        if held.revision == snap.revision() {
            return Ok(held);
        }
        let (records, modules) = crate::yang::read_modules(snap)?;
        let (records, yang) = if *held.records == records && held.revision != u64::MAX {
            (held.records.clone(), held.yang.clone())
        } else {
            let yang = match modules.is_empty() {
                true => None,
                false => Some(crate::yang::compiled(&records, &modules)?),
            };
            (Arc::new(records), yang)
        };
        let mut lists = crate::schema::load(snap)?;
        // A YANG schema gives every list its keys and ordering.
        if let Some(y) = &yang {
            lists.lists.extend(y.lists());
        }
        let fresh = Arc::new(Catalog {
            revision: snap.revision(),
            lists: Arc::new(lists),
            yang,
            validation: crate::yang::read_validation(snap)?,
            control: Arc::new(Control::load(snap)?),
            records,
        });
        let mut g = self.current.write().map_err(|_| poisoned())?;
        if g.revision == u64::MAX || g.revision < fresh.revision {
            *g = fresh.clone();
        }
        Ok(fresh)
    }

    /// The revision of the catalog held, if one was read.
    pub fn newest(&self) -> Option<u64> {
        let revision = self.current.read().map(|c| c.revision).unwrap_or(u64::MAX);
        (revision != u64::MAX).then_some(revision)
    }

    /// The catalog held, when it is `revision`'s (nothing is read).
    pub fn held(&self, revision: u64) -> Option<Arc<Catalog>> {
        let held = self.current.read().ok()?;
        (held.revision == revision).then(|| held.clone())
    }

    /// After this store committed `revision` on top of revision `base`: when
    /// the held catalog is `base`'s and nothing came between, the catalog of
    /// `revision` is the held one with `lists` and `control` replaced where
    /// given. Otherwise the held catalog stays (the next read reads one).
    pub fn committed(&self, base: u64, revision: u64, lists: Option<Schemaless>, control: Option<Control>) {
        let Ok(mut g) = self.current.write() else { return };
        if g.revision != base || base.checked_add(1) != Some(revision) {
            return;
        }
        *g = Arc::new(Catalog {
            revision,
            lists: lists.map(Arc::new).unwrap_or_else(|| g.lists.clone()),
            yang: g.yang.clone(),
            validation: g.validation,
            control: control.map(Arc::new).unwrap_or_else(|| g.control.clone()),
            records: g.records.clone(),
        });
    }
}
