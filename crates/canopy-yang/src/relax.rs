//! Loading module sets that libyang refuses but other YANG tools accept.
//!
//! libyang resolves every leafref path where the leaf is instantiated and
//! refuses a module set in which one does not resolve (a grouping's relative
//! path that only makes sense at some of its uses, an absolute path into a
//! module that is not in the set). ODL yangtools, which ONAP CPS is built on,
//! resolves them lazily and loads such sets. [`YangSchema::add_texts_relaxed`]
//! loads them too: each leafref whose path does not resolve becomes a string
//! leaf (its values are kept as given, its target is not checked), and every
//! such change is reported as a [`Relaxation`].
//!
//! libyang also always holds its own `ietf-inet-types` and `ietf-yang-types`
//! (revision 2013-07-15) and refuses another module of the same namespace
//! and revision: a set bringing a renamed copy of them (ONAP CPS's own
//! tests upload `ietf-inet-types-test`) gets that module's namespace made
//! unique, reported too. Nothing else is relaxed.

use std::path::PathBuf;

use crate::{Error, Module, YangSchema};

/// At most this many leafrefs are relaxed in one module set.
const MAX_RELAXED: usize = 64;

/// One change to a module's text so that a module set compiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relaxation {
    /// The file (as given) whose text was changed.
    pub file: String,
    /// The line of the changed statement in that file.
    pub line: usize,
    /// What was changed.
    pub what: Relaxed,
    /// Why libyang refused it.
    pub reason: String,
}

/// What a [`Relaxation`] changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relaxed {
    /// A leafref leaf (or leaf-list) made a string one.
    Leafref {
        /// The leaf's name.
        leaf: String,
        /// The leafref's path as written.
        path: String,
    },
    /// A module's namespace, which one of libyang's own modules holds at
    /// the same revision, made unique.
    Namespace {
        module: String,
        /// The namespace as written.
        namespace: String,
        /// The namespace given instead.
        now: String,
    },
}

impl std::fmt::Display for Relaxation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.what {
            Relaxed::Leafref { leaf, path } => write!(
                f,
                "{}:{}: leafref `{leaf}` (path \"{path}\") does not resolve: {}; it is loaded as a string leaf whose \
                 target is not checked",
                self.file, self.line, self.reason
            ),
            Relaxed::Namespace { module, namespace, now } => write!(
                f,
                "{}:{}: module `{module}` has the namespace \"{namespace}\" of a module the YANG library always holds \
                 ({}); it is loaded with the namespace \"{now}\" (its data, in JSON, is named by the module as before)",
                self.file, self.line, self.reason
            ),
        }
    }
}

impl YangSchema {
    /// [`YangSchema::add_texts`], relaxing each leafref whose path does not
    /// resolve into a string leaf. Returns the schema, the texts as compiled
    /// (the relaxed statements replaced in place, lines kept) and what was
    /// relaxed; any other error is returned as [`YangSchema::add_texts`]
    /// returns it.
    ///
    /// # Errors
    /// As [`YangSchema::add_texts`].
    pub fn add_texts_relaxed(
        existing: &[Module],
        texts: &[(String, String)],
        search: &[PathBuf],
    ) -> Result<(YangSchema, Vec<Relaxation>), Error> {
        let mut texts = texts.to_vec();
        let mut done = Vec::new();
        'compile: loop {
            let e = match YangSchema::add_texts(existing, &texts, search) {
                Ok(s) => return Ok((s, done)),
                Err(e) => e,
            };
            let Error::Module { reason, .. } = &e else { return Err(e) };
            if done.len() >= MAX_RELAXED {
                return Err(e);
            }
            if let Some((module, namespace)) = builtin_namespace_taken(reason) {
                let Some((i, at)) = texts.iter().enumerate().find_map(|(i, (_, t))| {
                    namespace_statement(t, &module).filter(|a| a.namespace == namespace).map(|a| (i, a))
                }) else {
                    return Err(e);
                };
                let now = format!("{namespace}:canopy-relaxed:{module}");
                texts[i].1 = at.replaced(&texts[i].1, &now);
                done.push(Relaxation {
                    file: texts[i].0.clone(),
                    line: at.line,
                    what: Relaxed::Namespace { module, namespace, now },
                    reason: reason.clone(),
                });
                continue 'compile;
            }
            if !leafref_path_error(reason) {
                return Err(e);
            }
            let Some(leaf) = failing_leaf(reason) else { return Err(e) };
            let missing = missing_node(reason);
            // Every leafref leaf of that name whose path names the missing
            // node: the first whose relaxing moves compilation past this
            // error is kept.
            for (i, (file, text)) in texts.iter().enumerate() {
                for c in leafrefs(text, &leaf) {
                    if missing.as_deref().is_some_and(|m| !c.path.contains(m)) {
                        continue;
                    }
                    let mut trial = texts.clone();
                    trial[i].1 = c.relaxed(text);
                    let moved = match YangSchema::add_texts(existing, &trial, search) {
                        Ok(_) => true,
                        Err(Error::Module { reason: r, .. }) => r != *reason,
                        Err(_) => true,
                    };
                    if moved {
                        done.push(Relaxation {
                            file: file.clone(),
                            line: c.line,
                            what: Relaxed::Leafref { leaf: leaf.clone(), path: c.path.clone() },
                            reason: reason.clone(),
                        });
                        texts = trial;
                        continue 'compile;
                    }
                }
            }
            return Err(e);
        }
    }
}

/// libyang's own modules whose namespace another module of the same
/// revision cannot have.
const BUILTIN: [&str; 2] = ["ietf-inet-types", "ietf-yang-types"];

/// From `Two different modules ("ietf-inet-types" and "x") have the same
/// namespace "N".`, where the first is one of libyang's own: the other
/// module's name and the namespace.
fn builtin_namespace_taken(reason: &str) -> Option<(String, String)> {
    let rest = reason.strip_prefix("Two different modules (\"")?;
    let (a, rest) = rest.split_once("\" and \"")?;
    let (b, rest) = rest.split_once("\") have the same namespace \"")?;
    let (ns, _) = rest.split_once('"')?;
    let other = match (BUILTIN.contains(&a), BUILTIN.contains(&b)) {
        (true, false) => b,
        (false, true) => a,
        _ => return None,
    };
    Some((other.to_string(), ns.to_string()))
}

/// The `namespace` statement of the module `module` in `text`.
struct NamespaceAt {
    /// Byte range from `namespace` to its semicolon.
    start: usize,
    end: usize,
    line: usize,
    namespace: String,
}

impl NamespaceAt {
    /// `text` with the statement giving `now`, its lines kept.
    fn replaced(&self, text: &str, now: &str) -> String {
        let old = &text[self.start..self.end];
        let mut new = format!("namespace \"{now}\";");
        new.extend(std::iter::repeat_n('\n', old.matches('\n').count()));
        format!("{}{new}{}", &text[..self.start], &text[self.end..])
    }
}

fn namespace_statement(text: &str, module: &str) -> Option<NamespaceAt> {
    let toks = tokens(text);
    let word = |i: usize| match toks.get(i) {
        Some((Tok::Word(w), _, _)) => Some(w.as_str()),
        _ => None,
    };
    if word(0) != Some("module") || word(1) != Some(module) {
        return None;
    }
    // The statement among the module's own (depth one).
    let mut depth = 0;
    for (i, (t, at, line)) in toks.iter().enumerate() {
        match t {
            Tok::Open => depth += 1,
            Tok::Close => depth -= 1,
            Tok::Word(w) if depth == 1 && w == "namespace" => {
                let namespace = word(i + 1)?.to_string();
                let (Tok::Semi, semi, _) = toks.get(i + 2)? else { return None };
                return Some(NamespaceAt { start: *at, end: semi + 1, line: *line, namespace });
            }
            _ => {}
        }
    }
    None
}

/// Whether libyang's message is about a leafref path that does not resolve.
fn leafref_path_error(reason: &str) -> bool {
    reason.contains(" in path.") || reason.contains("leafref path") || reason.starts_with("Target of leafref")
}

/// The leaf named by the schema location libyang appends, `(/m:a/m2:b/leaf)`.
fn failing_leaf(reason: &str) -> Option<String> {
    let open = reason.rfind("(/")?;
    let loc = reason[open + 1..].strip_suffix(')')?;
    let last = loc.rsplit('/').next()?;
    let name = last.rsplit(':').next()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The node libyang did not find: `Not found node "x" in path.`
fn missing_node(reason: &str) -> Option<String> {
    let rest = reason.split("Not found node \"").nth(1)?;
    rest.split('"').next().map(str::to_string)
}

/// A `type leafref { … }` statement inside a `leaf NAME` or `leaf-list NAME`.
struct Leafref {
    /// Byte range of the type statement, `type` to its closing brace.
    start: usize,
    end: usize,
    /// Line of the leaf's statement (1-based).
    line: usize,
    path: String,
}

impl Leafref {
    /// `text` with this statement made `type string;`, its lines kept.
    fn relaxed(&self, text: &str) -> String {
        let old = &text[self.start..self.end];
        let note = self.path.replace("*/", "* /");
        let mut new = format!("type string; /* relaxed from a leafref with path \"{note}\" */");
        new.extend(std::iter::repeat_n('\n', old.matches('\n').count()));
        format!("{}{new}{}", &text[..self.start], &text[self.end..])
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Open,
    Close,
    Semi,
    Plus,
}

/// YANG's tokens with their byte offsets and lines: words and quoted strings
/// (unquoted), braces, semicolons and `+`; comments skipped.
fn tokens(text: &str) -> Vec<(Tok, usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
                i = (i + 2).min(b.len());
            }
            b'{' | b'}' | b';' | b'+' => {
                let t = match c {
                    b'{' => Tok::Open,
                    b'}' => Tok::Close,
                    b';' => Tok::Semi,
                    _ => Tok::Plus,
                };
                out.push((t, start, line));
                i += 1;
            }
            b'"' | b'\'' => {
                let first = line;
                let mut s = String::new();
                i += 1;
                while i < b.len() && b[i] != c {
                    if c == b'"' && b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    line += usize::from(b[i] == b'\n');
                    let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
                    s.push_str(&text[i..i + ch_len]);
                    i += ch_len;
                }
                i = (i + 1).min(b.len());
                out.push((Tok::Word(s), start, first));
            }
            _ => {
                while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'{' | b'}' | b';' | b'"' | b'\'') {
                    i += 1;
                }
                out.push((Tok::Word(text[start..i].to_string()), start, line));
            }
        }
    }
    out
}

/// The `type leafref` statements of the leaves and leaf-lists named `leaf`.
fn leafrefs(text: &str, leaf: &str) -> Vec<Leafref> {
    let toks = tokens(text);
    let word = |i: usize| match toks.get(i) {
        Some((Tok::Word(w), _, _)) => Some(w.as_str()),
        _ => None,
    };
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if !matches!(word(i), Some("leaf" | "leaf-list")) || word(i + 1) != Some(leaf) {
            continue;
        }
        if toks.get(i + 2).map(|t| &t.0) != Some(&Tok::Open) {
            continue;
        }
        let line = toks[i].2;
        // The leaf's own statements: depth 1 inside its braces.
        let mut depth = 0usize;
        let mut j = i + 2;
        while j < toks.len() {
            match toks[j].0 {
                Tok::Open => depth += 1,
                Tok::Close => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            if depth == 1
                && word(j) == Some("type")
                && word(j + 1) == Some("leafref")
                && toks.get(j + 2).map(|t| &t.0) == Some(&Tok::Open)
            {
                if let Some(r) = type_block(&toks, j, line) {
                    out.push(r);
                }
            }
            j += 1;
        }
    }
    out
}

/// The `type leafref { … }` statement starting at token `at`.
fn type_block(toks: &[(Tok, usize, usize)], at: usize, line: usize) -> Option<Leafref> {
    let mut depth = 0usize;
    let mut path = String::new();
    let mut k = at + 2;
    while k < toks.len() {
        match &toks[k].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth -= 1;
                if depth == 0 {
                    return Some(Leafref { start: toks[at].1, end: toks[k].1 + 1, line, path });
                }
            }
            Tok::Word(w) if depth == 1 && w == "path" => {
                // The argument: strings joined by `+`.
                let mut m = k + 1;
                while let Some((Tok::Word(part), _, _)) = toks.get(m) {
                    path.push_str(part);
                    if toks.get(m + 1).map(|t| &t.0) != Some(&Tok::Plus) {
                        break;
                    }
                    m += 2;
                }
            }
            _ => {}
        }
        k += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUPING: &str = r#"module g {
  yang-version 1.1;
  namespace "urn:g";
  prefix g;
  // A grouping whose path resolves at one use only.
  grouping port-ref {
    leaf port {
      type leafref {
        path "../../port" + '/name';   /* the port of the device */
      }
    }
  }
  container devices {
    list device {
      key id;
      leaf id { type string; }
      list port { key name; leaf name { type string; } }
      container link { uses port-ref; }
    }
  }
  container elsewhere { uses port-ref; }
}
"#;

    #[test]
    fn finds_the_leafref_statement_of_a_leaf() {
        let found = leafrefs(GROUPING, "port");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 7);
        assert_eq!(found[0].path, "../../port/name");
        let relaxed = found[0].relaxed(GROUPING);
        assert_eq!(relaxed.lines().count(), GROUPING.lines().count(), "lines kept");
        assert!(relaxed.contains("type string; /* relaxed from a leafref with path \"../../port/name\" */"));
        assert!(leafrefs(&relaxed, "port").is_empty());
        assert!(leafrefs(GROUPING, "name").is_empty(), "not a leafref");
    }

    #[test]
    fn reads_libyang_messages() {
        let m = "Not found node \"port\" in path. (/g:elsewhere/port)";
        assert!(leafref_path_error(m));
        assert_eq!(failing_leaf(m).as_deref(), Some("port"));
        assert_eq!(missing_node(m).as_deref(), Some("port"));
        assert!(!leafref_path_error("Augment target node \"/x:y\" from module \"z\" was not found."));
    }

    #[test]
    fn a_set_with_an_unresolved_leafref_loads_relaxed() {
        let texts = [("g.yang".to_string(), GROUPING.to_string())];
        let Err(Error::Module { .. }) = YangSchema::add_texts(&[], &texts, &[]) else {
            panic!("libyang refuses the set as written")
        };
        let (schema, relaxed) = YangSchema::add_texts_relaxed(&[], &texts, &[]).unwrap();
        assert_eq!(relaxed.len(), 1, "{relaxed:?}");
        let r = &relaxed[0];
        assert_eq!((r.file.as_str(), r.line), ("g.yang", 7));
        assert_eq!(r.what, Relaxed::Leafref { leaf: "port".into(), path: "../../port/name".into() });
        assert!(
            r.to_string().starts_with("g.yang:7: leafref `port` (path \"../../port/name\") does not resolve"),
            "{r}"
        );
        assert!(schema.modules()[0].text.contains("relaxed from a leafref"));
        assert!(schema.lists().contains_key("/g:devices/device/port"));
    }

    /// A renamed copy of a module libyang always holds, at its revision.
    const TYPES_COPY: &str = r#"module my-inet-types {
  namespace "urn:ietf:params:xml:ns:yang:ietf-inet-types";
  prefix mit;
  revision 2013-07-15 { description "a copy under another name"; }
  typedef port-number { type uint16 { range "0..65535"; } }
}
"#;

    const USES_COPY: &str = r#"module svc {
  yang-version 1.1;
  namespace "urn:svc";
  prefix s;
  import my-inet-types { prefix mit; }
  container svc { leaf port { type mit:port-number; } }
}
"#;

    #[test]
    fn a_copy_of_a_builtin_module_loads_with_its_own_namespace() {
        let texts = [
            ("svc.yang".to_string(), USES_COPY.to_string()),
            ("my-inet-types.yang".to_string(), TYPES_COPY.to_string()),
        ];
        let Err(Error::Module { reason, .. }) = YangSchema::add_texts(&[], &texts, &[]) else {
            panic!("libyang refuses the set as written")
        };
        assert!(builtin_namespace_taken(&reason).is_some(), "{reason}");
        let (schema, relaxed) = YangSchema::add_texts_relaxed(&[], &texts, &[]).unwrap();
        assert_eq!(relaxed.len(), 1, "{relaxed:?}");
        let r = &relaxed[0];
        assert_eq!((r.file.as_str(), r.line), ("my-inet-types.yang", 2));
        let now = "urn:ietf:params:xml:ns:yang:ietf-inet-types:canopy-relaxed:my-inet-types";
        assert_eq!(
            r.what,
            Relaxed::Namespace {
                module: "my-inet-types".into(),
                namespace: "urn:ietf:params:xml:ns:yang:ietf-inet-types".into(),
                now: now.into()
            }
        );
        assert!(r.to_string().starts_with("my-inet-types.yang:2: module `my-inet-types` has the namespace"), "{r}");
        let copy = schema.modules().iter().find(|m| m.name == "my-inet-types").expect("loaded");
        assert!(copy.text.contains(&format!("namespace \"{now}\";")), "{}", copy.text);
        assert_eq!(copy.text.lines().count(), TYPES_COPY.lines().count(), "lines kept");
        // The type still holds: a port out of range is refused.
        assert!(schema.modules().iter().any(|m| m.name == "svc"));
    }

    #[test]
    fn reads_the_namespace_message() {
        let m = "Two different modules (\"ietf-inet-types\" and \"x-types\") have the same namespace \"urn:n\".";
        assert_eq!(builtin_namespace_taken(m), Some(("x-types".into(), "urn:n".into())));
        let m = "Two different modules (\"a\" and \"b\") have the same namespace \"urn:n\".";
        assert_eq!(builtin_namespace_taken(m), None, "two modules of the set: not relaxed");
    }

    #[test]
    fn other_errors_are_not_relaxed() {
        let text = "module h { namespace urn:h; prefix h;\n  leaf x { type nope; }\n}\n";
        let texts = [("h.yang".to_string(), text.to_string())];
        let e = YangSchema::add_texts_relaxed(&[], &texts, &[]).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("h.yang:2:"), "{e}");
    }
}
