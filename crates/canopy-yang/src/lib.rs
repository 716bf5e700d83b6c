//! canopy's YANG schema, on libyang.
//!
//! [`YangSchema`] compiles a set of YANG modules (kept as text inside the
//! store, see [`Module`]) with libyang, then answers the engine from plain Rust
//! data ([`model`]): which nodes exist and of which kind, list keys and
//! ordering, canonical values by type, defaults. Commit validation
//! ([`YangSchema::validate`]) checks what a transaction's changes touched, on
//! data the engine loads on request ([`DataAccess`]); libyang evaluates the
//! must and when expressions on a small data tree made of that data. No
//! libyang type appears in this crate's API.

mod ly;
pub mod model;
mod normalize;
mod search;
mod validate;
mod values;

use std::collections::BTreeMap;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Mutex;

use canopy_core::schema::NodeKind;
use canopy_core::ListInfo;

pub use canopy_core::schema::Violation;
pub use normalize::WithDefaults;
pub use validate::DataAccess;

use ly::{Ctx, Importer, LyError};
use model::Model;

/// The `perf` module of the sysrepo benchmark suite (`container cont` with
/// list `lst` keyed `k1 k2` and user-ordered list `usr-lst`).
pub const PERF_YANG: &str = include_str!("../modules/perf.yang");

/// One module of a schema, as stored: its YANG text and whether it is
/// implemented (its data nodes exist) or only imported (for its types,
/// groupings, identities).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    pub name: String,
    pub revision: Option<String>,
    pub implemented: bool,
    pub text: String,
}

/// Errors of loading modules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A module that does not parse or compile; `line` is 0 when libyang names none.
    #[error("{}", module_error(.file, .line, .reason))]
    Module { file: String, line: u64, reason: String },
    /// A module that imports or includes one that cannot be found.
    #[error("{0}")]
    NotFound(String),
    /// A file that cannot be read.
    #[error("{file}: {reason}")]
    Io { file: String, reason: String },
    /// libyang itself failed.
    #[error("libyang: {0}")]
    Internal(String),
}

fn module_error(file: &str, line: &u64, reason: &str) -> String {
    if *line > 0 {
        format!("{file}:{line}: {reason}")
    } else {
        format!("{file}: {reason}")
    }
}

/// A compiled set of YANG modules.
pub struct YangSchema {
    ctx: Mutex<Ctx>,
    model: Model,
    modules: Vec<Module>,
}

impl std::fmt::Debug for YangSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("YangSchema")
            .field("modules", &self.modules.iter().map(|m| &m.name).collect::<Vec<_>>())
            .finish()
    }
}

/// Serves imports from stored modules, then from files under search
/// directories (recorded, so that they can be stored).
struct Sources<'a> {
    stored: &'a [Module],
    dirs: &'a [PathBuf],
    /// Modules read from files: (name, file, text).
    read: Vec<(String, PathBuf, String)>,
    /// The file each served module came from, by name, for error messages.
    missing: Vec<String>,
}

impl Importer for Sources<'_> {
    fn import(&mut self, name: &str, revision: Option<&str>, sub: Option<(&str, Option<&str>)>) -> Option<String> {
        let (name, revision) = match sub {
            Some((s, r)) => (s, r),
            None => (name, revision),
        };
        let fits = |m: &Module| m.name == name && (revision.is_none() || m.revision.as_deref() == revision);
        if let Some(m) = self.stored.iter().find(|m| fits(m)) {
            return Some(m.text.clone());
        }
        if let Some((_, _, t)) = self.read.iter().find(|(n, _, _)| n == name) {
            return Some(t.clone());
        }
        match find_module_file(self.dirs, name, revision) {
            Some(file) => match std::fs::read_to_string(&file) {
                Ok(text) => {
                    self.read.push((name.to_string(), file, text.clone()));
                    Some(text)
                }
                Err(_) => None,
            },
            None => {
                self.missing.push(match revision {
                    Some(r) => format!("{name}@{r}"),
                    None => name.to_string(),
                });
                None
            }
        }
    }
}

/// `NAME.yang` or `NAME@REVISION.yang` under `dirs` (searched recursively):
/// the given revision, else the newest.
fn find_module_file(dirs: &[PathBuf], name: &str, revision: Option<&str>) -> Option<PathBuf> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    fn walk(dir: &FsPath, name: &str, found: &mut Vec<(String, PathBuf)>, depth: usize) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if depth < 8 {
                    walk(&p, name, found, depth + 1);
                }
                continue;
            }
            let Some(f) = p.file_name().and_then(|f| f.to_str()) else { continue };
            let Some(stem) = f.strip_suffix(".yang") else { continue };
            match stem.split_once('@') {
                Some((n, rev)) if n == name => found.push((rev.to_string(), p.clone())),
                None if stem == name => found.push((String::new(), p.clone())),
                _ => {}
            }
        }
    }
    for d in dirs {
        walk(d, name, &mut found, 0);
    }
    if let Some(r) = revision {
        if let Some((_, p)) = found.iter().find(|(rev, _)| rev == r) {
            return Some(p.clone());
        }
        // A file without a revision in its name may still be that revision.
        return found
            .into_iter()
            .find(|(rev, p)| {
                rev.is_empty() && std::fs::read_to_string(p).is_ok_and(|t| t.contains(&format!("revision {r}")))
            })
            .map(|(_, p)| p);
    }
    found.sort();
    found.pop().map(|(_, p)| p)
}

impl YangSchema {
    /// Compiles stored modules (as [`YangSchema::modules`] returned them).
    ///
    /// # Errors
    /// [`Error::Module`] when a module no longer compiles (the file named is
    /// the module's name).
    pub fn from_modules(modules: &[Module]) -> Result<YangSchema, Error> {
        let ctx = Ctx::new().map_err(Error::Internal)?;
        let mut src = Sources { stored: modules, dirs: &[], read: Vec::new(), missing: Vec::new() };
        for m in modules.iter().filter(|m| m.implemented) {
            ctx.parse_module(&m.text, &mut src)
                .map_err(|e| module_errors(&format!("module {}", m.name), &m.text, e, &src))?;
        }
        let model = Model::build(&ctx);
        Ok(YangSchema { ctx: Mutex::new(ctx), model, modules: modules.to_vec() })
    }

    /// Adds the modules in `files` to `existing` ones: every file is parsed
    /// and implemented, its imports and includes are taken from `existing`,
    /// then from `NAME.yang` / `NAME@REVISION.yang` files under `search`
    /// (recursively). A file holding a module that exists replaces it.
    ///
    /// # Errors
    /// [`Error::Io`] for a file that cannot be read, [`Error::Module`] naming
    /// the file and line of the first problem libyang reports.
    pub fn add_files(existing: &[Module], files: &[PathBuf], search: &[PathBuf]) -> Result<YangSchema, Error> {
        let mut texts = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(f)
                .map_err(|e| Error::Io { file: f.display().to_string(), reason: e.to_string() })?;
            texts.push((f.display().to_string(), text));
        }
        YangSchema::add_texts(existing, &texts, search)
    }

    /// [`YangSchema::add_files`] with module texts given as (name for error
    /// messages, YANG text).
    ///
    /// # Errors
    /// As [`YangSchema::add_files`].
    pub fn add_texts(existing: &[Module], texts: &[(String, String)], search: &[PathBuf]) -> Result<YangSchema, Error> {
        let names: Vec<Option<String>> = texts.iter().map(|(_, t)| search::header(t).map(|h| h.name)).collect();
        let kept: Vec<Module> =
            existing.iter().filter(|m| !names.iter().any(|n| n.as_deref() == Some(&m.name))).cloned().collect();
        let ctx = Ctx::new().map_err(Error::Internal)?;
        let mut src = Sources { stored: &kept, dirs: search, read: Vec::new(), missing: Vec::new() };
        for m in kept.iter().filter(|m| m.implemented) {
            ctx.parse_module(&m.text, &mut src)
                .map_err(|e| module_errors(&format!("module {}", m.name), &m.text, e, &src))?;
        }
        let mut added = Vec::new();
        for (file, text) in texts {
            let name = ctx.parse_module(text, &mut src).map_err(|e| module_errors(file, text, e, &src))?;
            added.push((name, text.clone()));
        }
        let model = Model::build(&ctx);
        let mut modules: Vec<Module> = kept.clone();
        for (name, text) in added {
            modules.retain(|m| m.name != name);
            modules.push(Module { revision: None, implemented: true, text, name });
        }
        for (name, _, text) in src.read {
            if !modules.iter().any(|m| m.name == name) {
                modules.push(Module { name, revision: None, implemented: false, text });
            }
        }
        for m in &mut modules {
            m.revision = ctx.ctx.get_module_latest(&m.name).and_then(|lm| lm.revision().map(str::to_string));
            if m.revision.is_none() {
                m.revision = search::header(&m.text).and_then(|h| h.revision().map(str::to_string));
            }
        }
        modules.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(YangSchema { ctx: Mutex::new(ctx), model, modules })
    }

    /// The modules of the schema, implemented and imported, by name.
    pub fn modules(&self) -> &[Module] {
        &self.modules
    }

    /// The compiled data nodes.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Every list of the schema with its keys and ordering, by schema path.
    /// Keyless lists (state data only) are addressed by position.
    pub fn lists(&self) -> BTreeMap<String, ListInfo> {
        self.model
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::List)
            .map(|n| {
                let info = if n.keys.is_empty() {
                    ListInfo::keyless()
                } else {
                    ListInfo { keys: n.keys.clone(), user_ordered: n.user_ordered }
                };
                (n.path.clone(), info)
            })
            .collect()
    }

    /// The kind of node at a schema path.
    pub fn kind(&self, schema_path: &str) -> Option<NodeKind> {
        self.model.by_path.get(schema_path).map(|&i| self.model.nodes[i].kind)
    }
}

/// The first libyang error as [`Error::Module`], naming the file being parsed
/// (or the imported module it failed in) and the line.
fn module_errors(file: &str, text: &str, errs: Vec<LyError>, src: &Sources<'_>) -> Error {
    if let Some(m) = src.missing.first() {
        if errs.iter().any(|e| e.msg.contains("not found") || e.msg.contains("Loading")) {
            let dirs: Vec<String> = src.dirs.iter().map(|d| d.display().to_string()).collect();
            return Error::NotFound(format!(
                "{file}: imports module {m}, which is neither in the store nor in the search directories ({})",
                if dirs.is_empty() { "none given: use --search DIR".to_string() } else { dirs.join(", ") }
            ));
        }
    }
    // An error inside an imported module names that module's file.
    let mut file = file.to_string();
    let mut text = text.to_string();
    for e in &errs {
        if let Some(rest) =
            e.msg.strip_prefix("Parsing module \"").or_else(|| e.msg.strip_prefix("Parsing submodule \""))
        {
            let name = rest.split('"').next().unwrap_or_default();
            if let Some((_, f, t)) = src.read.iter().find(|(n, _, _)| n == name) {
                file = f.display().to_string();
                text = t.clone();
            }
        }
    }
    let first = errs.iter().find(|e| e.line > 0).or(errs.first()).cloned();
    match first {
        Some(e) => {
            let mut reason = e.msg;
            if let Some(p) = e.path.filter(|p| !p.starts_with("Line number")) {
                reason = format!("{reason} ({p})");
            }
            let others: Vec<&str> =
                errs.iter().map(|x| x.msg.as_str()).filter(|m| *m != reason && !m.starts_with("Parsing")).collect();
            if let Some(o) = others.first() {
                if !reason.contains(o) {
                    reason = format!("{reason}; {o}");
                }
            }
            let line = if e.line > 0 { e.line } else { guess_line(&text, &reason) };
            Error::Module { file, line, reason }
        }
        None => Error::Module { file, line: 0, reason: "libyang rejected the module".into() },
    }
}

/// The line of a compile error libyang reports without one: the first line
/// of the module that holds the first quoted name of the message as a word
/// (`Referenced type "strin" not found.` → the line with `type strin`).
fn guess_line(text: &str, msg: &str) -> u64 {
    let Some(word) = msg.split('"').nth(1).filter(|w| !w.is_empty()) else { return 0 };
    let word = word.rsplit(':').next().unwrap_or(word);
    let is_word = |c: char| c.is_alphanumeric() || c == '-' || c == '_' || c == '.';
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let hit = code.match_indices(word).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + word.len()..].chars().next();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        });
        if hit {
            return i as u64 + 1;
        }
    }
    0
}
