//! The store's YANG schema: modules kept in the store (`keys::YANG`), compiled
//! once per change of the module set, edits checked and made canonical before
//! they are applied, and each transaction validated on what it changed.

use std::path::PathBuf;
use std::sync::Arc;

use canopy_core::edit::{Edit, Operation};
use canopy_core::path::Path;
use canopy_core::tree::Container;
use canopy_core::Violation;
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, Snapshot};
use canopy_yang::{DataAccess, Module, YangSchema};

use crate::error::{Error, Result};
use crate::load::Loader;
use crate::prepare::load_whole;
use crate::store::Store;

/// The module records of a snapshot: their raw bytes (for comparison) and
/// the modules.
pub(crate) fn read_modules(snap: &dyn Snapshot) -> Result<(Vec<u8>, Vec<Module>)> {
    let mut raw = Vec::new();
    let mut modules = Vec::new();
    let mut err = None;
    snap.scan_prefix(keys::YANG, false, &mut |k, v| {
        raw.extend_from_slice(k);
        raw.extend_from_slice(&(v.len() as u64).to_be_bytes());
        raw.extend_from_slice(v);
        let name = String::from_utf8_lossy(&k[keys::YANG.len()..]).into_owned();
        match decode_module(&name, v) {
            Ok(m) => {
                modules.push(m);
                Ok(true)
            }
            Err(e) => {
                err = Some(e);
                Ok(false)
            }
        }
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok((raw, modules)),
    }
}

fn encode_module(m: &Module) -> Vec<u8> {
    serde_json::json!({ "revision": m.revision, "implemented": m.implemented, "text": m.text }).to_string().into_bytes()
}

fn decode_module(name: &str, v: &[u8]) -> Result<Module> {
    let bad =
        || Error::Store(canopy_store::StoreError::corrupted(format!("the record of YANG module {name} is damaged")));
    let j: serde_json::Value = serde_json::from_slice(v).map_err(|_| bad())?;
    Ok(Module {
        name: name.to_string(),
        revision: j.get("revision").and_then(|r| r.as_str()).map(str::to_string),
        implemented: j.get("implemented").and_then(|b| b.as_bool()).ok_or_else(bad)?,
        text: j.get("text").and_then(|t| t.as_str()).ok_or_else(bad)?.to_string(),
    })
}

/// How much of the store's YANG schema each commit is checked against (kept
/// in the store under `keys::VALIDATION`, so every process checks alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Validation {
    /// Everything the schema says: names, structure and types, and the
    /// constraints between nodes (mandatory nodes, min/max-elements,
    /// unique, leafrefs, instance-identifiers, must and when).
    #[default]
    Full,
    /// Names, structure and types only, as edits are made canonical: lists
    /// need their keys, values their types' ranges, lengths and patterns;
    /// the constraints between nodes are not checked. ONAP CPS checks its
    /// anchors' data this way.
    Structure,
}

impl Validation {
    /// The level's name: `full` or `structure`.
    pub fn name(self) -> &'static str {
        match self {
            Validation::Full => "full",
            Validation::Structure => "structure",
        }
    }
}

impl std::fmt::Display for Validation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Validation {
    type Err = Error;

    fn from_str(s: &str) -> Result<Validation> {
        match s {
            "full" => Ok(Validation::Full),
            "structure" => Ok(Validation::Structure),
            _ => Err(Error::Usage(format!("unknown validation level `{s}`: expected `full` or `structure`"))),
        }
    }
}

/// The validation level recorded in a snapshot.
pub(crate) fn read_validation(snap: &dyn Snapshot) -> Result<Validation> {
    match snap.get(keys::VALIDATION)? {
        None => Ok(Validation::Full),
        Some(v) => std::str::from_utf8(&v).ok().and_then(|s| s.parse().ok()).ok_or_else(|| {
            Error::Store(canopy_store::StoreError::corrupted("the store's validation level record is damaged"))
        }),
    }
}

/// Schemas compiled in this process, by their module records: stores opened
/// on the same modules (or the same store opened again) share one compiled
/// schema instead of compiling it again. Entries go when no store uses them.
static COMPILED: std::sync::Mutex<Vec<(Vec<u8>, std::sync::Weak<YangSchema>)>> = std::sync::Mutex::new(Vec::new());

pub(crate) fn compiled(records: &[u8], modules: &[Module]) -> Result<Arc<YangSchema>> {
    let mut g = COMPILED.lock().map_err(|_| crate::store::poisoned())?;
    g.retain(|(_, w)| w.strong_count() > 0);
    if let Some(s) = g.iter().find(|(r, _)| r == records).and_then(|(_, w)| w.upgrade()) {
        return Ok(s);
    }
    let s = Arc::new(YangSchema::from_modules(modules).map_err(schema_error)?);
    g.push((records.to_vec(), Arc::downgrade(&s)));
    Ok(s)
}

fn schema_error(e: canopy_yang::Error) -> Error {
    Error::Schema(e.to_string())
}

impl Store {
    /// The store's YANG schema, if it has one.
    ///
    /// # Errors
    /// Backend errors; [`Error::Schema`] when the stored modules no longer compile.
    pub fn yang_schema(&self) -> Result<Option<Arc<YangSchema>>> {
        let snap = self.backend().snapshot()?;
        Ok(self.catalog_at(&*snap)?.yang.clone())
    }

    /// The modules of the store's schema (implemented and imported), by name.
    ///
    /// # Errors
    /// Backend errors, a damaged module record.
    pub fn schema_modules(&self) -> Result<Vec<Module>> {
        let snap = self.backend().snapshot()?;
        Ok(read_modules(&*snap)?.1)
    }

    /// How much of the schema commits are checked against.
    ///
    /// # Errors
    /// Backend errors, a damaged record.
    pub fn validation(&self) -> Result<Validation> {
        let snap = self.backend().snapshot()?;
        Ok(self.catalog_at(&*snap)?.validation)
    }

    /// Sets how much of the schema commits are checked against, from the next
    /// commit on, in every process using the store. Data already stored is
    /// not checked again: raising the level to [`Validation::Full`] holds
    /// later commits to every constraint, including the nodes they touch
    /// that were stored under the lighter level.
    ///
    /// # Errors
    /// Backend errors.
    pub fn set_validation(&self, level: Validation) -> Result<()> {
        let _w = self.writer.lock().map_err(|_| crate::store::poisoned())?;
        let snap = self.backend().snapshot()?;
        if read_validation(&*snap)? == level {
            return Ok(());
        }
        let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
        match level {
            Validation::Full => batch.delete(keys::VALIDATION.to_vec()),
            Validation::Structure => batch.put(keys::VALIDATION.to_vec(), level.name().as_bytes().to_vec()),
        }
        // The leafref indexes are kept at `full` only: commits under
        // `structure` leave them behind, so they go, and the first commit at
        // `full` builds them again.
        for ds in Datastore::ALL {
            batch.delete(keys::leafrefs_key(ds));
            batch.delete_prefix(keys::leafref_index_prefix(ds));
        }
        drop(snap);
        self.backend().apply(&batch)?;
        Ok(())
    }

    /// Adds YANG modules to the store's schema: each file is parsed and
    /// implemented (all its features enabled), its imports and includes are
    /// taken from the modules already stored, then from `NAME.yang` or
    /// `NAME@REVISION.yang` under the `search` directories. A module that is
    /// stored already is replaced by the file's. The modules are stored in
    /// one transaction; every process opening the store uses them.
    ///
    /// Data already stored must fit the new schema: its names and values are
    /// checked, and lists the store learned without a schema must have the
    /// keys and ordering the schema gives them.
    ///
    /// # Errors
    /// [`Error::Schema`] for a module that does not parse or compile (file and
    /// line) or an import that cannot be found; [`Error::Invalid`] for stored
    /// data that does not fit; [`Error::Usage`] for a learned list with other
    /// keys; backend errors.
    pub fn schema_add(&self, files: &[PathBuf], search: &[PathBuf]) -> Result<Vec<Module>> {
        let mut texts = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(f).map_err(|e| Error::Schema(format!("{}: {e}", f.display())))?;
            texts.push((f.display().to_string(), text));
        }
        self.schema_add_texts(&texts, search)
    }

    /// [`Store::schema_add`] with the modules given as text: (a name for error
    /// messages, such as the file name; the YANG text).
    ///
    /// # Errors
    /// As [`Store::schema_add`].
    pub fn schema_add_texts(&self, texts: &[(String, String)], search: &[PathBuf]) -> Result<Vec<Module>> {
        let _w = self.writer.lock().map_err(|_| crate::store::poisoned())?;
        let snap = self.backend().snapshot()?;
        let (_, existing) = read_modules(&*snap)?;
        let schema = YangSchema::add_texts(&existing, texts, search).map_err(schema_error)?;
        let learned = crate::schema::load(&*snap)?;
        for (path, info) in schema.lists() {
            if let Some(known) = learned.lists.get(&path) {
                if *known != info {
                    return Err(Error::Usage(format!(
                        "list {path} is stored with keys {:?}{}, the schema gives it keys {:?}{}",
                        known.keys,
                        if known.user_ordered { " (ordered by user)" } else { "" },
                        info.keys,
                        if info.user_ordered { " (ordered by user)" } else { "" },
                    )));
                }
            }
        }
        // Stored data must fit.
        let mut lists = learned.clone();
        lists.lists.extend(schema.lists());
        let mut problems = Vec::new();
        for ds in Datastore::ALL {
            let mut root = Container::default();
            Loader::new(&*snap, ds, &lists).range(&mut root, &[])?;
            if root.children.is_empty() {
                continue;
            }
            let edit = Edit {
                op: Operation::Replace,
                path: Path::root(),
                value: Some(canopy_core::tree::Node::Container(root)),
                insert: None,
            };
            if let Err(v) = schema.normalize_edit(edit, ds == Datastore::Operational) {
                problems.extend(v.into_iter().map(|v| Violation { path: format!("{} {}", ds.name(), v.path), ..v }));
            }
        }
        if !problems.is_empty() {
            return Err(Error::Invalid(problems));
        }
        let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
        // Leafref indexes of another set of leafrefs go; the next commit to
        // each datastore builds its index again.
        let before = self.catalog_at(&*snap)?.yang.as_ref().and_then(|y| y.leafref_index_id());
        if before != schema.leafref_index_id() {
            for ds in Datastore::ALL {
                batch.delete(keys::leafrefs_key(ds));
                batch.delete_prefix(keys::leafref_index_prefix(ds));
            }
        }
        batch.delete_prefix(keys::YANG.to_vec());
        for m in schema.modules() {
            let mut k = keys::YANG.to_vec();
            k.extend_from_slice(m.name.as_bytes());
            batch.put(k, encode_module(m));
        }
        drop(snap);
        self.backend().apply(&batch)?;
        // The next operation reads the modules back as stored: compile them
        // now (`compiled` keeps them for the catalog) so that the first commit
        // after this call does not. An error here is the next operation's to
        // report, as it was before: the modules are stored.
        if let Ok(snap) = self.backend().snapshot() {
            let _ = self.catalog_at(&*snap);
        }
        Ok(schema.modules().to_vec())
    }
}

/// Checks and canonicalises a transaction's edits against the schema.
pub(crate) fn normalize_edits(yang: Option<&YangSchema>, ds: Datastore, edits: Vec<Edit>) -> Result<Vec<Edit>> {
    let Some(y) = yang else { return Ok(edits) };
    let mut out = Vec::with_capacity(edits.len());
    let mut problems = Vec::new();
    for e in edits {
        match y.normalize_edit(e, ds == Datastore::Operational) {
            Ok(e) => out.push(e),
            Err(v) => problems.extend(v),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(Error::Invalid(problems))
    }
}

/// Checks an instance path of a read against the schema.
pub(crate) fn check_read_path(yang: Option<&YangSchema>, path: &Path) -> Result<Path> {
    match yang {
        Some(y) => Ok(y.resolve_path(path)?.0),
        None => Ok(path.clone()),
    }
}

/// The sparse tree of an uncached transaction, loaded further on request.
pub(crate) struct Sparse<'l, 'a> {
    pub loader: &'l mut Loader<'a>,
    pub root: &'l mut Container,
    /// The datastore's leafref index, if the transaction keeps one.
    pub index: Option<&'l dyn LeafrefLookup>,
}

/// Where a transaction finds the leafrefs holding a value (the datastore's
/// leafref index, in the module `leafrefs`).
pub(crate) trait LeafrefLookup {
    /// The instance paths listed for `referrer` (a schema path) holding
    /// `value` in `snap`; `None` when there is no complete list.
    fn lookup(&self, snap: &dyn Snapshot, referrer: &str, value: &str) -> Result<Option<Vec<Path>>>;
}

impl DataAccess for Sparse<'_, '_> {
    fn tree(&self) -> &Container {
        self.root
    }

    fn load(&mut self, path: &Path, whole: bool) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let parent = path.parent().unwrap_or_default();
        self.loader.path(self.root, &parent)?;
        if whole {
            load_whole(self.loader, self.root, path)?;
        } else {
            self.loader.path(self.root, path)?;
        }
        Ok(())
    }

    fn referrers(
        &mut self,
        referrer: &str,
        value: &str,
    ) -> std::result::Result<Option<Vec<Path>>, Box<dyn std::error::Error + Send + Sync>> {
        match self.index {
            Some(index) => Ok(index.lookup(self.loader.snapshot(), referrer, value)?),
            None => Ok(None),
        }
    }
}

/// An error of loading data during validation, as the engine's error.
pub(crate) fn load_error(e: Box<dyn std::error::Error + Send + Sync>) -> Error {
    match e.downcast::<Error>() {
        Ok(e) => *e,
        Err(e) => Error::Usage(e.to_string()),
    }
}

/// Validates a transaction's changes.
pub(crate) fn validate(
    yang: &YangSchema,
    ds: Datastore,
    changes: &[canopy_core::diff::Change],
    data: &mut dyn DataAccess,
) -> Result<()> {
    let v = yang.validate_in(changes, data, ds != Datastore::Operational).map_err(load_error)?;
    if v.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(v))
    }
}
