//! Dataspaces, schema sets and anchors, kept on the server's one store.
//!
//! Keys (all under `0x40`, beside the store's own records and datastores):
//! ```text
//! 0x40 'D' <dataspace>                        a dataspace
//! 0x40 'S' <dataspace> 0x00 <schema set>      its modules (JSON)
//! 0x40 'A' <dataspace> 0x00 <anchor>          its schema set (JSON)
//! 0x40 'N' <dataspace> 0x00 <anchor> 0x00 …   the anchor's own canopy store
//! ```
//! Names never hold `0x00` (they are checked), so every anchor's data is one
//! key range of its own: reading one anchor never touches another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use canopy::{Options, Store, Validation};
use canopy_store::prefixed::Prefixed;
use canopy_store::{Backend, Batch};
use serde_json::{json, Value as Json};

use super::CpsError;

const AREA: u8 = 0x40;

/// One module of a schema set.
#[derive(Clone, Debug)]
pub struct ModuleRef {
    pub name: String,
    pub revision: Option<String>,
    pub namespace: String,
    pub prefix: String,
    pub text: String,
}

pub struct SchemaSet {
    pub name: String,
    pub modules: Vec<ModuleRef>,
    /// How its anchors' commits are checked: structure and types, as CPS
    /// does, unless the set was created with `validation=full`.
    pub validation: Validation,
}

impl SchemaSet {
    /// The prefix CPS names a module's top-level nodes with.
    pub fn prefix_of(&self, module: &str) -> String {
        self.modules.iter().find(|m| m.name == module).map_or_else(|| module.to_string(), |m| m.prefix.clone())
    }

    pub fn texts(&self) -> Vec<(String, String)> {
        self.modules.iter().map(|m| (format!("{}.yang", m.name), m.text.clone())).collect()
    }
}

/// An open anchor.
pub struct Anchor {
    pub dataspace: String,
    pub name: String,
    pub set: Arc<SchemaSet>,
    pub store: Store,
}

pub struct Registry {
    root: Arc<dyn Backend>,
    url: String,
    open: Mutex<HashMap<(String, String), Arc<Anchor>>>,
    admin: Mutex<()>,
}

fn key(kind: u8, ds: &str, name: Option<&str>) -> Vec<u8> {
    let mut k = vec![AREA, kind];
    k.extend_from_slice(ds.as_bytes());
    if let Some(n) = name {
        k.push(0);
        k.extend_from_slice(n.as_bytes());
    }
    k
}

fn data_prefix(ds: &str, anchor: &str) -> Vec<u8> {
    let mut k = key(b'N', ds, Some(anchor));
    k.push(0);
    k
}

/// CPS's rule for names: no whitespace and none of ``!"#$%&'()*+,./\:;<=>?@[]^`{|}~``.
pub fn check_name(what: &str, name: &str) -> Result<(), CpsError> {
    if name.is_empty() {
        return Err(CpsError::bad("Name or ID Cannot be empty", format!("{what} name must not be empty")));
    }
    if let Some(c) =
        name.chars().find(|c| c.is_whitespace() || "!\"#$%&'()*+,./\\:;<=>?@[]^`{|}~".contains(*c) || c.is_control())
    {
        return Err(CpsError::bad(
            format!("{name} is an invalid {what} name"),
            format!("{what} name `{name}` contains the character {c:?}, which names may not hold"),
        ));
    }
    Ok(())
}

fn store_err(e: impl std::fmt::Display) -> CpsError {
    CpsError::internal(e.to_string())
}

/// Module texts laid out as `NAME.yang` files in a temporary directory, for
/// the search path of their imports (CPS users bring files named without
/// revisions, imported with `revision-date`).
///
/// # Errors
/// The directory cannot be written.
pub fn module_dir(texts: &[(String, String)]) -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    for (i, (file, text)) in texts.iter().enumerate() {
        let name = module_name(text).unwrap_or_else(|| format!("upload-{i}"));
        let name = if name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            name
        } else {
            format!("upload-{i}")
        };
        let _ = file;
        std::fs::write(dir.path().join(format!("{name}.yang")), text)?;
    }
    Ok(dir)
}

/// The name a module or submodule text declares.
pub fn module_name(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == "module" || w == "submodule" {
            return words.next().map(|n| n.trim_matches(|c| c == '{' || c == '"' || c == '\'').to_string());
        }
    }
    None
}

/// The `namespace` and `prefix` statements of a module's text (comments skipped).
pub fn header(text: &str) -> (String, String) {
    let mut tokens = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && tokens.len() < 64 {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'"' | b'\'' => {
                let q = b[i];
                let s = i + 1;
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1 + usize::from(b[i] == b'\\' && q == b'"');
                }
                tokens.push(String::from_utf8_lossy(&b[s..i.min(b.len())]).into_owned());
                i += 1;
            }
            c if c.is_ascii_whitespace() || matches!(c, b';' | b'{' | b'}') => {
                if matches!(c, b'{' | b'}') {
                    tokens.push((c as char).to_string());
                }
                i += 1;
            }
            _ => {
                let s = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b';' | b'{' | b'}') {
                    i += 1;
                }
                tokens.push(String::from_utf8_lossy(&b[s..i]).into_owned());
            }
        }
    }
    let mut depth = 0;
    let (mut ns, mut prefix) = (String::new(), String::new());
    for w in tokens.windows(2) {
        match w[0].as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "namespace" if depth == 1 && ns.is_empty() => ns.clone_from(&w[1]),
            "prefix" if depth == 1 && prefix.is_empty() => prefix.clone_from(&w[1]),
            _ => {}
        }
    }
    (ns, prefix)
}

impl Registry {
    pub fn new(root: Arc<dyn Backend>, url: &str) -> Registry {
        Registry { root, url: url.to_string(), open: Mutex::new(HashMap::new()), admin: Mutex::new(()) }
    }

    fn get(&self, k: &[u8]) -> Result<Option<Vec<u8>>, CpsError> {
        self.root.snapshot().and_then(|s| s.get(k)).map_err(store_err)
    }

    fn names(&self, prefix: &[u8]) -> Result<Vec<(String, Vec<u8>)>, CpsError> {
        let mut out = Vec::new();
        let snap = self.root.snapshot().map_err(store_err)?;
        snap.scan_prefix(prefix, false, &mut |k, v| {
            out.push((String::from_utf8_lossy(&k[prefix.len()..]).into_owned(), v.to_vec()));
            Ok(true)
        })
        .map_err(store_err)?;
        Ok(out)
    }

    fn apply(&self, batch: &Batch) -> Result<(), CpsError> {
        self.root.apply(batch).map(|_| ()).map_err(store_err)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.admin.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn dataspace_exists(&self, ds: &str) -> Result<(), CpsError> {
        match self.get(&key(b'D', ds, None))? {
            Some(_) => Ok(()),
            None => Err(CpsError::bad("Dataspace not found", format!("Dataspace with name {ds} does not exist."))),
        }
    }

    pub fn create_dataspace(&self, ds: &str) -> Result<(), CpsError> {
        check_name("Dataspace", ds)?;
        let _g = self.lock();
        if self.get(&key(b'D', ds, None))?.is_some() {
            return Err(CpsError::exists(format!("Dataspace with name {ds} already exists.")));
        }
        let mut b = Batch::default();
        b.put(key(b'D', ds, None), Vec::new());
        self.apply(&b)
    }

    pub fn dataspaces(&self) -> Result<Vec<String>, CpsError> {
        Ok(self.names(&[AREA, b'D'])?.into_iter().map(|(n, _)| n).collect())
    }

    pub fn delete_dataspace(&self, ds: &str) -> Result<(), CpsError> {
        let _g = self.lock();
        self.dataspace_exists(ds)?;
        let anchors = self.names(&key(b'A', ds, Some("")))?.len();
        if anchors > 0 {
            return Err(CpsError::in_use(
                format!("Dataspace with name {ds} is being used."),
                format!("Dataspace contains {anchors} anchor(s)"),
            ));
        }
        let sets = self.names(&key(b'S', ds, Some("")))?.len();
        if sets > 0 {
            return Err(CpsError::in_use(
                format!("Dataspace with name {ds} is being used."),
                format!("Dataspace contains {sets} schemaset(s)"),
            ));
        }
        let mut b = Batch::default();
        b.delete(key(b'D', ds, None));
        self.apply(&b)
    }

    pub fn create_schema_set(
        &self,
        ds: &str,
        name: &str,
        modules: Vec<ModuleRef>,
        validation: Validation,
    ) -> Result<(), CpsError> {
        check_name("Schema Set", name)?;
        let _g = self.lock();
        self.dataspace_exists(ds)?;
        if self.get(&key(b'S', ds, Some(name)))?.is_some() {
            return Err(CpsError::exists(format!("Schema Set with name {name} already exists for {ds}.")));
        }
        let record = json!({"modules": modules.iter().map(|m| json!({
            "name": m.name, "revision": m.revision, "namespace": m.namespace, "prefix": m.prefix, "text": m.text,
        })).collect::<Vec<_>>(), "validation": validation.name()});
        let mut b = Batch::default();
        b.put(key(b'S', ds, Some(name)), record.to_string().into_bytes());
        self.apply(&b)
    }

    pub fn schema_set(&self, ds: &str, name: &str) -> Result<SchemaSet, CpsError> {
        self.dataspace_exists(ds)?;
        let raw = self.get(&key(b'S', ds, Some(name)))?.ok_or_else(|| {
            CpsError::bad(
                "Schema Set not found.",
                format!("Schema Set with name {name} was not found for dataspace {ds}."),
            )
        })?;
        decode_set(name, &raw)
    }

    pub fn schema_sets(&self, ds: &str) -> Result<Vec<SchemaSet>, CpsError> {
        self.dataspace_exists(ds)?;
        self.names(&key(b'S', ds, Some("")))?.into_iter().map(|(n, raw)| decode_set(&n, &raw)).collect()
    }

    pub fn delete_schema_set(&self, ds: &str, name: &str) -> Result<(), CpsError> {
        let _g = self.lock();
        self.schema_set(ds, name)?;
        if self.anchors(ds)?.iter().any(|(_, s)| s == name) {
            return Err(CpsError::in_use(
                "Schema Set is being used.".into(),
                format!("Schema Set with name {name} in dataspace {ds} is having Anchor records associated."),
            ));
        }
        let mut b = Batch::default();
        b.delete(key(b'S', ds, Some(name)));
        self.apply(&b)
    }

    /// Anchors of a dataspace: (name, schema set), by name.
    pub fn anchors(&self, ds: &str) -> Result<Vec<(String, String)>, CpsError> {
        self.dataspace_exists(ds)?;
        let mut out = Vec::new();
        for (n, raw) in self.names(&key(b'A', ds, Some("")))? {
            let v: Json = serde_json::from_slice(&raw).map_err(store_err)?;
            out.push((n, v["schemaSet"].as_str().unwrap_or_default().to_string()));
        }
        Ok(out)
    }

    pub fn anchor_set(&self, ds: &str, anchor: &str) -> Result<String, CpsError> {
        self.dataspace_exists(ds)?;
        let raw = self.get(&key(b'A', ds, Some(anchor)))?.ok_or_else(|| not_an_anchor(ds, anchor))?;
        let v: Json = serde_json::from_slice(&raw).map_err(store_err)?;
        Ok(v["schemaSet"].as_str().unwrap_or_default().to_string())
    }

    fn open_store(&self, ds: &str, anchor: &str) -> Result<Store, CpsError> {
        let backend = Prefixed::new(self.root.clone(), data_prefix(ds, anchor));
        Store::from_backend(Box::new(backend), &format!("{}#cps/{ds}/{anchor}", self.url), Options::default())
            .map_err(store_err)
    }

    pub fn create_anchor(&self, ds: &str, set: &str, anchor: &str) -> Result<(), CpsError> {
        check_name("Anchor", anchor)?;
        let _g = self.lock();
        let schema = self.schema_set(ds, set)?;
        if self.get(&key(b'A', ds, Some(anchor)))?.is_some() {
            return Err(CpsError::exists(format!("Anchor with name {anchor} already exists for {ds}.")));
        }
        // Whatever a deleted anchor of that name left goes first.
        let mut b = Batch::default();
        b.delete_prefix(data_prefix(ds, anchor));
        self.apply(&b)?;
        let store = self.open_store(ds, anchor)?;
        let texts = schema.texts();
        let dir = module_dir(&texts).map_err(store_err)?;
        store
            .schema_add_texts(&texts, &[dir.path().to_path_buf()])
            .map_err(|e| CpsError::bad("Invalid schema set", e.to_string()))?;
        store.set_validation(schema.validation).map_err(store_err)?;
        let mut b = Batch::default();
        b.put(key(b'A', ds, Some(anchor)), json!({"schemaSet": set}).to_string().into_bytes());
        self.apply(&b)
    }

    pub fn delete_anchor(&self, ds: &str, anchor: &str) -> Result<(), CpsError> {
        let _g = self.lock();
        self.anchor_set(ds, anchor)?;
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&(ds.to_string(), anchor.to_string()));
        let mut b = Batch::default();
        b.delete(key(b'A', ds, Some(anchor)));
        b.delete_prefix(data_prefix(ds, anchor));
        self.apply(&b)
    }

    /// The anchor, opened once and kept.
    pub fn anchor(&self, ds: &str, anchor: &str) -> Result<Arc<Anchor>, CpsError> {
        let k = (ds.to_string(), anchor.to_string());
        if let Some(a) = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&k) {
            return Ok(a.clone());
        }
        let set = self.anchor_set(ds, anchor)?;
        let set = Arc::new(self.schema_set(ds, &set)?);
        let store = self.open_store(ds, anchor)?;
        let a = Arc::new(Anchor { dataspace: ds.to_string(), name: anchor.to_string(), set, store });
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(open.entry(k).or_insert(a).clone())
    }
}

pub fn not_an_anchor(ds: &str, anchor: &str) -> CpsError {
    CpsError::bad("Anchor not found", format!("Anchor with name {anchor} does not exist in dataspace {ds}."))
}

fn decode_set(name: &str, raw: &[u8]) -> Result<SchemaSet, CpsError> {
    let v: Json = serde_json::from_slice(raw).map_err(store_err)?;
    let modules = v["modules"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| ModuleRef {
                    name: m["name"].as_str().unwrap_or_default().into(),
                    revision: m["revision"].as_str().map(Into::into),
                    namespace: m["namespace"].as_str().unwrap_or_default().into(),
                    prefix: m["prefix"].as_str().unwrap_or_default().into(),
                    text: m["text"].as_str().unwrap_or_default().into(),
                })
                .collect()
        })
        .unwrap_or_default();
    // Sets recorded before the level was kept are checked as CPS checks.
    let validation = match v["validation"].as_str() {
        Some(l) => l.parse().map_err(store_err)?,
        None => Validation::Structure,
    };
    Ok(SchemaSet { name: name.to_string(), modules, validation })
}
