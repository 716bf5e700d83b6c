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

mod kinds;
mod leafrefs;
mod ly;
pub mod model;
mod normalize;
mod relax;
mod search;
mod validate;
mod values;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use canopy_core::path::Path;
use canopy_core::schema::NodeKind;
use canopy_core::ListInfo;

pub use canopy_core::schema::Violation;
pub use leafrefs::{IndexChange, LeafrefUse};
pub use normalize::WithDefaults;
pub use relax::{Relaxation, Relaxed};
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
    /// Modules that need two revisions of one module (a store keeps one).
    #[error("{0}")]
    Conflict(String),
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

/// An encoding of YANG data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// RFC 7951.
    Json,
    /// RFC 7950 section 7 (NETCONF's and RESTCONF's XML).
    Xml,
}

impl Encoding {
    fn ly(self) -> ly::Format {
        match self {
            Encoding::Json => ly::Format::Json,
            Encoding::Xml => ly::Format::Xml,
        }
    }
}

/// Data [`YangSchema::convert`] could not read.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct ConvertError {
    pub message: String,
    /// The data or schema path the error names, when it names one.
    pub path: Option<String>,
}

impl ConvertError {
    fn new(message: impl Into<String>) -> ConvertError {
        ConvertError { message: message.into(), path: None }
    }
}

/// `path` as libyang's data paths spell it (module names where the module
/// changes, key values quoted).
fn ly_path(path: &Path) -> Result<String, ConvertError> {
    use canopy_core::path::Selector;
    let quote = |v: &str| -> Result<String, ConvertError> {
        match (v.contains('\''), v.contains('"')) {
            (false, _) => Ok(format!("'{v}'")),
            (true, false) => Ok(format!("\"{v}\"")),
            (true, true) => Err(ConvertError::new(format!("key value `{v}` holds both kinds of quote"))),
        }
    };
    let mut out = String::new();
    for s in &path.segments {
        out.push('/');
        out.push_str(&s.name);
        match &s.selector {
            Selector::None => {}
            Selector::Keys(kv) => {
                for (k, v) in kv {
                    out.push_str(&format!("[{k}={}]", quote(v)?));
                }
            }
            Selector::Value(v) => out.push_str(&format!("[.={}]", quote(v)?)),
            Selector::Position(_) => {
                return Err(ConvertError::new(format!("{path}: entries of keyless lists have no data path")))
            }
        }
    }
    Ok(out)
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

/// Serves imports and includes from stored modules, then from files under
/// search directories (recorded, so that they can be stored).
struct Sources<'a> {
    stored: &'a [Module],
    /// The texts being added (name, revision, text): an import among them
    /// is served from them, as given, before the search directories.
    added: Vec<(String, Option<String>, &'a str)>,
    dirs: &'a [PathBuf],
    /// The files under `dirs`, listed on the first search.
    files: Option<search::Files>,
    /// Modules read from files.
    read: Vec<Read>,
    /// The file (or stored module) being parsed, for whom modules are read.
    parsing: String,
    /// The modules and submodules that could not be found, in the order asked.
    missing: Vec<Missing>,
}

impl<'a> Sources<'a> {
    fn new(stored: &'a [Module], dirs: &'a [PathBuf]) -> Sources<'a> {
        Sources {
            stored,
            added: Vec::new(),
            dirs,
            files: None,
            read: Vec::new(),
            parsing: String::new(),
            missing: Vec::new(),
        }
    }
}

/// A module read from a search directory, and the file being parsed that
/// needed it (directly or not).
#[derive(Clone)]
struct Read {
    name: String,
    found: search::Found,
    by: String,
}

/// A module or submodule neither stored nor found in the search directories.
struct Missing {
    name: String,
    revision: Option<String>,
    submodule: bool,
    /// The revision of the stored module of that name, if one is stored.
    stored: Option<Option<String>>,
    /// The files named for it, with what they hold.
    looked: Vec<search::Looked>,
}

/// How many files a "not found" message lists.
const LOOKED_SHOWN: usize = 10;

impl Missing {
    /// `imports module NAME revision R, which is neither …`, saying why
    /// each candidate did not fit.
    fn describe(&self, dirs: &[PathBuf]) -> String {
        let Missing { name, revision, submodule, stored, looked } = self;
        let what = if *submodule { "includes submodule" } else { "imports module" };
        let rev = revision.as_ref().map(|r| format!(" revision {r}")).unwrap_or_default();
        let store = match stored {
            Some(Some(r)) => format!("the store (it holds revision {r})"),
            Some(None) => "the store (it holds one without a revision)".to_string(),
            None => "the store".to_string(),
        };
        let dirs = if dirs.is_empty() {
            "none given: use --search DIR".to_string()
        } else if looked.is_empty() {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            format!("no {name}.yang or {name}@REVISION.yang under {}", dirs.join(", "))
        } else {
            let mut shown: Vec<String> = looked.iter().take(LOOKED_SHOWN).map(ToString::to_string).collect();
            if looked.len() > LOOKED_SHOWN {
                shown.push(format!("and {} more", looked.len() - LOOKED_SHOWN));
            }
            format!("looked at: {}", shown.join(", "))
        };
        format!("{what} {name}{rev}, which is neither in {store} nor in the search directories ({dirs})")
    }
}

/// The revision of a stored module: what its text says (as libyang will
/// check it), else what was recorded.
fn stored_revision(m: &Module) -> Option<String> {
    search::header(&m.text).and_then(|h| h.revision().map(str::to_string)).or_else(|| m.revision.clone())
}

/// Parses the implemented modules of `kept` (their imports from `kept`, then
/// `search`), then `texts`. Returns the context, the modules to store (kept,
/// added, and those read, with their revisions) and the modules read at
/// another revision than one of the same name (a store keeps one).
fn compile(
    kept: &[Module],
    texts: &[(String, String)],
    search: &[PathBuf],
) -> Result<(Ctx, Vec<Module>, Vec<Conflict>), Error> {
    let ctx = Ctx::new().map_err(Error::Internal)?;
    let mut src = Sources::new(kept, search);
    src.added = texts
        .iter()
        .filter_map(|(_, t)| search::header(t).map(|h| (h.name.clone(), h.revision().map(str::to_string), t.as_str())))
        .collect();
    for m in kept.iter().filter(|m| m.implemented) {
        src.parsing = format!("module {}", m.name);
        ctx.parse_module(&m.text, &mut src).map_err(|e| module_errors(&src.parsing, &m.text, e, &src))?;
    }
    let mut modules: Vec<Module> = kept.to_vec();
    for (file, text) in texts {
        src.parsing.clone_from(file);
        let name = ctx.parse_module(text, &mut src).map_err(|e| module_errors(file, text, e, &src))?;
        modules.retain(|m| m.name != name);
        modules.push(Module { revision: None, implemented: true, text: text.clone(), name });
    }
    for m in &mut modules {
        m.revision = search::header(&m.text).and_then(|h| h.revision().map(str::to_string));
        if m.revision.is_none() {
            m.revision = ctx.ctx.get_module_latest(&m.name).and_then(|lm| lm.revision().map(str::to_string));
        }
    }
    let mut conflicts = Vec::new();
    let mut read: Vec<Read> = Vec::new();
    for r in src.read {
        if let Some(first) = read.iter().find(|f| f.name == r.name) {
            if first.found.revision != r.found.revision {
                conflicts.push(Conflict::Read { first: first.clone(), second: r });
            }
        } else if let Some(m) = modules.iter().find(|m| m.name == r.name) {
            if m.revision != r.found.revision {
                let (revision, implemented) = (m.revision.clone(), m.implemented);
                conflicts.push(Conflict::Schema { read: r.clone(), revision, implemented });
            }
            read.push(r);
        } else {
            read.push(r);
        }
    }
    read.retain(|r| !modules.iter().any(|m| m.name == r.name));
    for r in read {
        modules.push(Module { name: r.name, revision: r.found.revision, implemented: false, text: r.found.text });
    }
    modules.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((ctx, modules, conflicts))
}

/// A module found in the search directories at another revision than a
/// module of the same name the schema holds or another file read.
enum Conflict {
    /// A module of the schema (stored or added) at `revision`.
    Schema { read: Read, revision: Option<String>, implemented: bool },
    /// Two files read.
    Read { first: Read, second: Read },
}

impl Conflict {
    /// Whether the schema's module may be replaced by the one read: it is
    /// only imported, so its revision is not the user's choice.
    fn replaceable(&self) -> bool {
        matches!(self, Conflict::Schema { implemented: false, .. })
    }

    fn error(&self) -> Error {
        let rev = |r: &Option<String>| match r {
            Some(r) => format!("revision {r}"),
            None => "no revision".to_string(),
        };
        let (by, needs, but) = match self {
            Conflict::Schema { read, revision, implemented } => (
                &read.by,
                read,
                if *implemented {
                    format!(", but the schema implements {} of it", rev(revision))
                } else {
                    format!(", but the stored modules need {} and do not load with it", rev(revision))
                },
            ),
            Conflict::Read { first, second } => {
                (&first.by, first, format!(" and {} ({})", rev(&second.found.revision), second.found.path.display()))
            }
        };
        Error::Conflict(format!(
            "{by}: needs module {} {} ({}){but}; a store keeps one revision of each module",
            needs.name,
            rev(&needs.found.revision),
            needs.found.path.display()
        ))
    }
}

impl Importer for Sources<'_> {
    fn import(&mut self, name: &str, revision: Option<&str>, sub: Option<(&str, Option<&str>)>) -> Option<String> {
        let (name, revision, submodule) = match sub {
            Some((s, r)) => (s, r, true),
            None => (name, revision, false),
        };
        let fits = |rev: Option<&str>| revision.is_none_or(|r| rev == Some(r));
        if let Some(m) = self.stored.iter().find(|m| m.name == name && fits(stored_revision(m).as_deref())) {
            return Some(m.text.clone());
        }
        if let Some((_, _, text)) = self.added.iter().find(|(n, r, _)| n == name && fits(r.as_deref())) {
            return Some((*text).to_string());
        }
        if let Some(r) = self.read.iter().find(|r| r.name == name && fits(r.found.revision.as_deref())) {
            return Some(r.found.text.clone());
        }
        let files = self.files.get_or_insert_with(|| search::Files::scan(self.dirs));
        match files.find(name, revision, submodule) {
            Ok(found) => {
                let text = found.text.clone();
                self.read.push(Read { name: name.to_string(), found, by: self.parsing.clone() });
                Some(text)
            }
            Err(looked) => {
                let stored = self.stored.iter().find(|m| m.name == name).map(stored_revision);
                self.missing.push(Missing {
                    name: name.to_string(),
                    revision: revision.map(str::to_string),
                    submodule,
                    stored,
                    looked,
                });
                None
            }
        }
    }
}

impl YangSchema {
    /// Compiles stored modules (as [`YangSchema::modules`] returned them).
    ///
    /// # Errors
    /// [`Error::Module`] when a module no longer compiles (the file named is
    /// the module's name).
    pub fn from_modules(modules: &[Module]) -> Result<YangSchema, Error> {
        let ctx = Ctx::new().map_err(Error::Internal)?;
        let mut src = Sources::new(modules, &[]);
        for m in modules.iter().filter(|m| m.implemented) {
            ctx.parse_module(&m.text, &mut src)
                .map_err(|e| module_errors(&format!("module {}", m.name), &m.text, e, &src))?;
        }
        Ok(YangSchema::new(ctx, modules.to_vec()))
    }

    /// Converts data between RFC 7951 JSON and the XML encoding (RFC 7950
    /// section 7): `text` holds children of the node at `parent` (at the root,
    /// top-level nodes), in `from`. Returns each node printed in `to` with its
    /// module or namespace; at the root, one document holding them all. The
    /// data is checked against the schema's nodes and types (unknown
    /// elements, namespaces and bad values are errors), not validated as a
    /// whole (mandatory nodes, references).
    ///
    /// # Errors
    /// What libyang found wrong with `text`, or a parent path it cannot build.
    pub fn convert(
        &self,
        parent: &Path,
        text: &str,
        from: Encoding,
        to: Encoding,
    ) -> Result<Vec<String>, ConvertError> {
        let at = if parent.is_root() { None } else { Some(ly_path(parent)?) };
        let ctx = self.ctx.lock().map_err(|_| ConvertError::new("schema lock poisoned"))?;
        ctx.convert(at.as_deref(), text, from.ly(), to.ly()).map_err(|errs| {
            let first = errs.into_iter().last().unwrap_or(LyError { msg: "libyang error".into(), line: 0, path: None });
            let message = if first.line > 0 { format!("line {}: {}", first.line, first.msg) } else { first.msg };
            ConvertError { message, path: first.path }
        })
    }

    fn new(ctx: Ctx, modules: Vec<Module>) -> YangSchema {
        let model = Model::build(&ctx);
        YangSchema { ctx: Mutex::new(ctx), model, modules }
    }

    /// Adds the modules in `files` to `existing` ones: every file is parsed
    /// and implemented, its imports and includes are taken from `existing`,
    /// then from files under `search` found as libyang finds them: by name
    /// (`NAME.yang`, `NAME@REVISION.yang`, recursively), the one whose text
    /// holds the revision-date asked for, else the newest. A file holding a
    /// module that exists replaces it; an import-only module stored at
    /// another revision than one found for a revision-date is replaced too,
    /// if the stored modules compile with the one found.
    ///
    /// # Errors
    /// [`Error::Io`] for a file that cannot be read, [`Error::Module`] naming
    /// the file and line of the first problem libyang reports,
    /// [`Error::NotFound`] for a module that is not found (naming the files
    /// looked at), [`Error::Conflict`] when two revisions of one module
    /// would have to be stored.
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
        let (ctx, modules, conflicts) = compile(&kept, texts, search)?;
        let Some(first) = conflicts.first() else { return Ok(YangSchema::new(ctx, modules)) };
        // A stored import-only module gives way to the revision found for a
        // revision-date, if the stored modules still compile with it; a module
        // that is implemented, or two revisions read, cannot be settled so.
        if let Some(c) = conflicts.iter().find(|c| !c.replaceable()) {
            return Err(c.error());
        }
        let mut kept = kept.clone();
        for c in &conflicts {
            if let Conflict::Schema { read, .. } = c {
                let m = kept.iter_mut().find(|m| m.name == read.name).expect("a conflict with a kept module");
                m.text.clone_from(&read.found.text);
                m.revision.clone_from(&read.found.revision);
            }
        }
        match compile(&kept, texts, search) {
            Ok((ctx, modules, again)) if again.is_empty() => Ok(YangSchema::new(ctx, modules)),
            _ => Err(first.error()),
        }
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
            return Error::NotFound(format!("{file}: {}", m.describe(src.dirs)));
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
            if let Some(r) = src.read.iter().find(|r| r.name == name) {
                file = r.found.path.display().to_string();
                text = r.found.text.clone();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::tests::dir;

    /// Module `a`, importing `b` at `revision`, added with `d` searched.
    fn add_a(existing: &[Module], d: &tempfile::TempDir, revision: &str) -> Result<YangSchema, Error> {
        let a = format!(
            "module a {{ namespace urn:a; prefix a;\n  import b {{ prefix b; revision-date {revision}; }}\n  leaf x {{ type b:t; }}\n}}"
        );
        YangSchema::add_texts(existing, &[("a.yang".into(), a)], &[d.path().to_path_buf()])
    }

    /// Module `b` with these revision statements and a marker in its description.
    fn b(revisions: &str, marker: &str) -> String {
        format!("module b {{ namespace urn:b; prefix b;\n  description \"{marker}\";\n  {revisions}\n  typedef t {{ type string; }}\n}}")
    }

    /// The stored module `name`: its revision and the marker its text holds.
    fn stored(s: &YangSchema, name: &str) -> (Option<String>, String) {
        let m = s.modules().iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name} not stored"));
        let marker = m.text.split("description \"").nth(1).and_then(|r| r.split('"').next()).unwrap_or_default();
        (m.revision.clone(), marker.to_string())
    }

    /// The message of an error, with `d`'s path as `DIR`.
    fn message(e: &Error, d: &tempfile::TempDir) -> String {
        e.to_string().replace(&format!("{}/", d.path().display()), "DIR/")
    }

    fn not_found(r: Result<YangSchema, Error>, d: &tempfile::TempDir) -> String {
        match r {
            Err(e @ Error::NotFound(_)) => message(&e, d),
            other => panic!("expected NotFound, got {other:?}"),
        }
    }

    #[test]
    fn an_import_with_a_revision_date_is_found_in_a_file_named_without_it() {
        let d = dir(&[("b.yang", &b("revision \"2020-01-01\";", "quoted"))]);
        let s = add_a(&[], &d, "2020-01-01").unwrap();
        assert_eq!(stored(&s, "b"), (Some("2020-01-01".into()), "quoted".into()));
        assert!(!s.modules().iter().find(|m| m.name == "b").unwrap().implemented);
    }

    #[test]
    fn a_module_is_its_newest_revision() {
        let d = dir(&[("b.yang", &b("revision '2021-01-01' { description \"new\"; }\n  revision 2020-01-01;", "two"))]);
        let s = add_a(&[], &d, "2021-01-01").unwrap();
        assert_eq!(stored(&s, "b"), (Some("2021-01-01".into()), "two".into()));
        // The older revision statement is history, not the module's revision.
        assert_eq!(
            not_found(add_a(&[], &d, "2020-01-01"), &d),
            "a.yang: imports module b revision 2020-01-01, which is neither in the store nor in the search \
             directories (looked at: DIR/b.yang (revision 2021-01-01))"
        );
    }

    #[test]
    fn a_missing_revision_names_every_file_looked_at() {
        let d = dir(&[
            ("b.yang", &b("revision 2023-01-23;", "plain")),
            ("x/b@2010-09-24.yang", &b("revision 2010-09-24;", "old")),
            ("y/b.yang", "module c { namespace urn:c; prefix c; revision 2013-07-15; }"),
        ]);
        assert_eq!(
            not_found(add_a(&[], &d, "2013-07-15"), &d),
            "a.yang: imports module b revision 2013-07-15, which is neither in the store nor in the search \
             directories (looked at: DIR/b.yang (revision 2023-01-23), DIR/x/b@2010-09-24.yang (revision \
             2010-09-24), DIR/y/b.yang (holds module c))"
        );
        let many: Vec<(String, String)> = (10..22)
            .map(|i| (format!("d{i}/b@2000-01-{i}.yang"), b(&format!("revision 2000-01-{i};"), "many")))
            .collect();
        let d = dir(&many.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect::<Vec<_>>());
        let e = not_found(add_a(&[], &d, "2013-07-15"), &d);
        assert!(e.contains("DIR/d19/b@2000-01-19.yang (revision 2000-01-19), and 2 more)"), "{e}");
        assert!(!e.contains("d20"), "{e}");
        // No file named for the module; no search directory at all.
        let d = dir(&[]);
        let e = not_found(add_a(&[], &d, "2013-07-15"), &d);
        assert!(e.ends_with(&format!("(no b.yang or b@REVISION.yang under {})", d.path().display())), "{e}");
        let e = YangSchema::add_texts(
            &[],
            &[("a.yang".into(), "module a { namespace urn:a; prefix a; import b { prefix b; } }".into())],
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("search directories (none given: use --search DIR)"), "{e}");
    }

    #[test]
    fn a_file_named_for_the_revision_is_preferred_and_its_text_checked() {
        let d = dir(&[
            ("b.yang", &b("revision 2020-01-01;", "plain")),
            ("x/b@2020-01-01.yang", &b("revision 2020-01-01;", "named")),
        ]);
        assert_eq!(stored(&add_a(&[], &d, "2020-01-01").unwrap(), "b").1, "named");
        // A file whose name says the revision but whose text holds another is passed over…
        let d = dir(&[
            ("b@2020-01-01.yang", &b("revision 2019-01-01;", "misnamed")),
            ("x/b.yang", &b("revision 2020-01-01;", "plain")),
        ]);
        assert_eq!(stored(&add_a(&[], &d, "2020-01-01").unwrap(), "b").1, "plain");
        // …and named when nothing fits.
        std::fs::remove_file(d.path().join("x/b.yang")).unwrap();
        assert_eq!(
            not_found(add_a(&[], &d, "2020-01-01"), &d),
            "a.yang: imports module b revision 2020-01-01, which is neither in the store nor in the search \
             directories (looked at: DIR/b@2020-01-01.yang (named for revision 2020-01-01, holds revision 2019-01-01))"
        );
    }

    #[test]
    fn submodules_are_found_the_same_way() {
        let d = dir(&[(
            "sub/a-sub.yang",
            "submodule a-sub { belongs-to a { prefix a; }\n  revision \"2020-01-01\";\n  leaf y { type string; } }",
        )]);
        let a = "module a { namespace urn:a; prefix a; include a-sub { revision-date 2020-01-01; } }";
        let s = YangSchema::add_texts(&[], &[("a.yang".into(), a.into())], &[d.path().to_path_buf()]).unwrap();
        assert!(s.kind("/a:y").is_some());
        assert_eq!(s.modules().iter().find(|m| m.name == "a-sub").unwrap().revision.as_deref(), Some("2020-01-01"));
        let a = a.replace("2020-01-01", "2021-01-01");
        let e = not_found(YangSchema::add_texts(&[], &[("a.yang".into(), a)], &[d.path().to_path_buf()]), &d);
        assert_eq!(
            e,
            "a.yang: includes submodule a-sub revision 2021-01-01, which is neither in the store nor in the search \
             directories (looked at: DIR/sub/a-sub.yang (revision 2020-01-01))"
        );
    }

    /// The published modules `scripts/setup.sh` fetches (pyang's set, in
    /// `ietf/` and `iana/`, every file named without its revision), from
    /// `CANOPY_YANG_MODULES` as `scripts/test.sh` sets it; `None` (the test
    /// says it is skipped) when unset, except in CI.
    fn published() -> Option<PathBuf> {
        match std::env::var_os("CANOPY_YANG_MODULES") {
            Some(d) => Some(PathBuf::from(d)),
            None if std::env::var_os("CI").is_some() => panic!("CANOPY_YANG_MODULES is not set"),
            None => {
                eprintln!("skipped: CANOPY_YANG_MODULES is not set (scripts/test.sh sets it)");
                None
            }
        }
    }

    #[test]
    fn published_headers_name_their_file() {
        let Some(dir) = published() else { return };
        let mut seen = 0;
        for sub in ["ietf", "iana"] {
            for e in std::fs::read_dir(dir.join(sub)).unwrap() {
                let p = e.unwrap().path();
                let text = std::fs::read_to_string(&p).unwrap();
                let h = search::header(&text).unwrap_or_else(|| panic!("{}", p.display()));
                assert_eq!(Some(h.name.as_str()), p.file_stem().and_then(|s| s.to_str()), "{}", p.display());
                // Published modules list their newest revision first.
                let first = text.lines().map(str::trim_start).find_map(|l| l.strip_prefix("revision ")).unwrap();
                assert!(first.trim_start_matches(['"', '\'']).starts_with(h.revision().unwrap()), "{}", p.display());
                seen += 1;
            }
        }
        assert!(seen > 50, "{seen} modules");
    }

    #[test]
    fn published_includes_and_imports_with_revision_dates() {
        let Some(dir) = published() else { return };
        let search = [dir.clone()];
        // ietf-snmp includes eleven submodules at 2014-12-10, ietf-ipv6-unicast-routing
        // includes ietf-ipv6-router-advertisements at 2018-03-13 (a file with two revisions).
        let files: Vec<PathBuf> = ["ietf-snmp", "ietf-ipv6-unicast-routing"]
            .iter()
            .map(|n| dir.join("ietf").join(format!("{n}.yang")))
            .collect();
        let s = YangSchema::add_files(&[], &files, &search).unwrap();
        let revision = |s: &YangSchema, n: &str| {
            s.modules().iter().find(|m| m.name == n).unwrap_or_else(|| panic!("{n} not stored")).revision.clone()
        };
        assert_eq!(revision(&s, "ietf-snmp-usm").as_deref(), Some("2014-12-10"));
        assert_eq!(revision(&s, "ietf-ipv6-router-advertisements").as_deref(), Some("2018-03-13"));
        assert_eq!(revision(&s, "ietf-routing").as_deref(), Some("2018-03-13"));
        // ietf-netconf-acm writes its revisions quoted.
        let user = |rev: &str, module: &str, prefix: &str| {
            format!("module user {{ namespace urn:u; prefix u; import {module} {{ prefix {prefix}; revision-date {rev}; }} }}")
        };
        let s = YangSchema::add_texts(
            s.modules(),
            &[("user.yang".into(), user("2018-02-14", "ietf-netconf-acm", "nacm"))],
            &search,
        )
        .unwrap();
        assert_eq!(revision(&s, "ietf-netconf-acm").as_deref(), Some("2018-02-14"));
        // An older revision of ietf-routing than the set holds is not served,
        // neither from the store nor from the file that lists it as history.
        let e = YangSchema::add_texts(
            s.modules(),
            &[("user.yang".into(), user("2016-11-04", "ietf-routing", "rt"))],
            &search,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!(
                "user.yang: imports module ietf-routing revision 2016-11-04, which is neither in the store (it holds \
                 revision 2018-03-13) nor in the search directories (looked at: {} (revision 2018-03-13))",
                dir.join("ietf/ietf-routing.yang").display()
            )
        );
    }

    #[test]
    fn a_stored_module_of_another_revision_gives_way_if_nothing_pins_it() {
        let old = dir(&[("b@2019-01-01.yang", &b("revision 2019-01-01;", "old"))]);
        let new = dir(&[("b.yang", &b("revision 2020-01-01;", "new"))]);
        let c = |pin: &str| {
            let c = format!(
                "module c {{ namespace urn:c; prefix c; import b {{ prefix b; {pin} }} leaf y {{ type b:t; }} }}"
            );
            YangSchema::add_texts(&[], &[("c.yang".into(), c)], &[old.path().to_path_buf()]).unwrap()
        };
        // c takes any revision of b: the stored b (2019) is not served for a's
        // revision-date, and 2020 replaces it, c compiled against it.
        let stored_c = c("");
        assert_eq!(stored(&stored_c, "b").1, "old");
        let s = add_a(stored_c.modules(), &new, "2020-01-01").unwrap();
        assert_eq!(stored(&s, "b"), (Some("2020-01-01".into()), "new".into()));
        assert_eq!(s.modules().iter().filter(|m| m.name == "b").count(), 1);
        YangSchema::from_modules(s.modules()).unwrap();
        // c pinned to 2019: a store keeps one revision of b, so a cannot have 2020.
        let pinned = c("revision-date 2019-01-01;");
        let e = add_a(pinned.modules(), &new, "2020-01-01").unwrap_err();
        assert_eq!(
            message(&e, &new),
            "a.yang: needs module b revision 2020-01-01 (DIR/b.yang), but the stored modules need revision \
             2019-01-01 and do not load with it; a store keeps one revision of each module"
        );
        // Nor can it when the stored b is implemented.
        let implemented = YangSchema::add_files(&[], &[old.path().join("b@2019-01-01.yang")], &[]).unwrap();
        let e = add_a(implemented.modules(), &new, "2020-01-01").unwrap_err();
        assert_eq!(
            message(&e, &new),
            "a.yang: needs module b revision 2020-01-01 (DIR/b.yang), but the schema implements revision \
             2019-01-01 of it; a store keeps one revision of each module"
        );
    }

    #[test]
    fn two_revisions_of_one_module_from_the_search_are_refused() {
        let d = dir(&[
            ("b.yang", &b("revision 2020-01-01;", "new")),
            ("x/b@2019-01-01.yang", &b("revision 2019-01-01;", "old")),
            ("c.yang", "module c { namespace urn:c; prefix c; import b { prefix b; revision-date 2019-01-01; } }"),
        ]);
        let a = "module a { namespace urn:a; prefix a;\n  import b { prefix b; revision-date 2020-01-01; }\n  import c { prefix c; }\n}";
        let e = YangSchema::add_texts(&[], &[("a.yang".into(), a.into())], &[d.path().to_path_buf()]).unwrap_err();
        assert_eq!(
            message(&e, &d),
            "a.yang: needs module b revision 2020-01-01 (DIR/b.yang) and revision 2019-01-01 \
             (DIR/x/b@2019-01-01.yang); a store keeps one revision of each module"
        );
    }
}
