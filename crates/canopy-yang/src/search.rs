//! Finding modules in search directories as libyang's own search does: by
//! module name (files `NAME.yang` and `NAME@REVISION.yang`, recursively), then
//! by what each file says about itself (its name and revisions, read without
//! libyang), so that a file named without its revision is found too and a
//! failed search can say which files it looked at.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The name a YANG text declares (`module NAME` or `submodule NAME`) and the
/// dates of its top-level `revision` statements, in the order written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub name: String,
    pub submodule: bool,
    pub revisions: Vec<String>,
}

impl Header {
    /// The module's revision: the most recent of its revision dates (RFC 7950
    /// §7.1.9; libyang sorts them and takes the newest too, whatever the order
    /// they are written in).
    pub fn revision(&self) -> Option<&str> {
        self.revisions.iter().max().map(String::as_str)
    }
}

/// The header of a YANG text, or `None` when it does not start with a
/// `module` or `submodule` statement. Comments and the contents of strings
/// are skipped; a `revision` counts only directly inside the module's body,
/// and only with a well-formed date (`YYYY-MM-DD`) as its argument.
pub(crate) fn header(text: &str) -> Option<Header> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut tokens = Tokens { text, at: 0 };
    let mut head: Option<Header> = None;
    let mut depth = 0usize;
    // Whether the next string is a statement's keyword (not its argument).
    let mut keyword_next = true;
    while let Some(token) = tokens.next() {
        match token {
            Token::Open => {
                depth += 1;
                keyword_next = true;
            }
            Token::Close => {
                if depth <= 1 {
                    break;
                }
                depth -= 1;
                keyword_next = true;
            }
            Token::End => keyword_next = true,
            Token::Str(_) if !keyword_next => {}
            Token::Str(keyword) => {
                keyword_next = false;
                match (depth, &head) {
                    (0, None) => {
                        let submodule = match keyword.as_str() {
                            "module" => false,
                            "submodule" => true,
                            _ => return None,
                        };
                        let Some(Token::Str(name)) = tokens.next() else { return None };
                        head = Some(Header { name, submodule, revisions: Vec::new() });
                    }
                    (1, Some(_)) if keyword == "revision" => {
                        if let Some(Token::Str(date)) = tokens.next() {
                            if is_date(&date) {
                                head.as_mut().expect("matched Some").revisions.push(date);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    head
}

/// `YYYY-MM-DD`, the form of a revision date (its calendar is not checked).
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

/// The `.yang` files under search directories (recursively), by the module
/// name their file name gives, each list in directory order then path order.
#[derive(Debug, Default)]
pub(crate) struct Files {
    by_name: BTreeMap<String, Vec<PathBuf>>,
}

/// How deep below a search directory files are looked for (directory links
/// are followed, so a loop of them must end).
const MAX_DEPTH: usize = 16;

impl Files {
    /// Lists the files under `dirs`; unreadable directories are skipped.
    pub fn scan(dirs: &[PathBuf]) -> Files {
        fn walk(dir: &Path, depth: usize, files: &mut Files) {
            let Ok(rd) = std::fs::read_dir(dir) else { return };
            let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            entries.sort();
            for p in entries {
                if p.is_dir() {
                    if depth < MAX_DEPTH {
                        walk(&p, depth + 1, files);
                    }
                    continue;
                }
                let Some(stem) = p.file_name().and_then(|f| f.to_str()).and_then(|f| f.strip_suffix(".yang")) else {
                    continue;
                };
                let name = stem.split_once('@').map_or(stem, |(n, _)| n);
                let list = files.by_name.entry(name.to_string()).or_default();
                if !list.contains(&p) {
                    list.push(p);
                }
            }
        }
        let mut files = Files::default();
        for d in dirs {
            walk(d, 0, &mut files);
        }
        files
    }

    /// Module (or submodule) `name` at `revision`, else the newest one.
    ///
    /// Every file named for the module is read. With a revision, the file
    /// must hold that revision (the newest of its revision statements): a
    /// `NAME@REVISION.yang` file is preferred, then `NAME.yang`. Without one,
    /// the newest revision found is taken. A file that declares another name,
    /// or a module where a submodule is asked for (or the reverse), never
    /// fits.
    ///
    /// # Errors
    /// Every file looked at, with what it holds, when none fits.
    pub fn find(&self, name: &str, revision: Option<&str>, submodule: bool) -> Result<Found, Vec<Looked>> {
        let mut looked = Vec::new();
        let mut fits: Vec<(Found, Option<String>)> = Vec::new();
        for path in self.by_name.get(name).into_iter().flatten() {
            let named = file_revision(path, name);
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    looked.push(Looked { path: path.clone(), holds: Holds::Unreadable(e.to_string()) });
                    continue;
                }
            };
            let holds = match header(&text) {
                None => Holds::NotYang,
                Some(h) if h.name != name || h.submodule != submodule => {
                    Holds::Other { name: h.name, submodule: h.submodule }
                }
                Some(h) => {
                    let rev = h.revision().map(str::to_string);
                    let holds = match &named {
                        Some(n) if rev.as_ref() != Some(n) => {
                            Holds::Misnamed { named: n.clone(), revision: rev.clone() }
                        }
                        _ => Holds::Revision(rev.clone()),
                    };
                    fits.push((Found { path: path.clone(), text, revision: rev }, named));
                    holds
                }
            };
            looked.push(Looked { path: path.clone(), holds });
        }
        let chosen = match revision {
            Some(r) => {
                fits.into_iter().filter(|(f, _)| f.revision.as_deref() == Some(r)).min_by_key(
                    |(_, named)| match named {
                        Some(n) if n == r => 0,
                        None => 1,
                        Some(_) => 2,
                    },
                )
            }
            None => {
                // The newest; between equals, the file whose name says so, then the first.
                let mut best: Option<(Found, Option<String>)> = None;
                for (f, named) in fits {
                    let key = |f: &Found, named: &Option<String>| (f.revision.clone(), *named == f.revision);
                    if best.as_ref().is_none_or(|(b, bn)| key(&f, &named) > key(b, bn)) {
                        best = Some((f, named));
                    }
                }
                best
            }
        };
        chosen.map(|(f, _)| f).ok_or(looked)
    }
}

/// The revision a file name gives: `NAME@REVISION.yang`.
fn file_revision(path: &Path, name: &str) -> Option<String> {
    let f = path.file_name()?.to_str()?;
    let rev = f.strip_prefix(name)?.strip_prefix('@')?.strip_suffix(".yang")?;
    is_date(rev).then(|| rev.to_string())
}

/// A module read from a search directory.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub path: PathBuf,
    pub text: String,
    /// Its newest revision.
    pub revision: Option<String>,
}

/// A file a search looked at, and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Looked {
    pub path: PathBuf,
    pub holds: Holds,
}

/// What a file named for a module holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Holds {
    /// The module asked for, at this revision (`None`: it has no revision).
    Revision(Option<String>),
    /// The module asked for, at a revision other than its file name says.
    Misnamed { named: String, revision: Option<String> },
    /// Another module or submodule, or a module where a submodule is asked
    /// for (or the reverse).
    Other { name: String, submodule: bool },
    /// No `module` or `submodule` statement.
    NotYang,
    /// A file that cannot be read: why.
    Unreadable(String),
}

impl std::fmt::Display for Looked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rev = |r: &Option<String>| match r {
            Some(r) => format!("revision {r}"),
            None => "no revision".to_string(),
        };
        write!(f, "{} (", self.path.display())?;
        match &self.holds {
            Holds::Revision(r) => write!(f, "{}", rev(r))?,
            Holds::Misnamed { named, revision } => write!(f, "named for revision {named}, holds {}", rev(revision))?,
            Holds::Other { name, submodule } => {
                write!(f, "holds {} {name}", if *submodule { "submodule" } else { "module" })?
            }
            Holds::NotYang => write!(f, "no module statement")?,
            Holds::Unreadable(e) => write!(f, "unreadable: {e}")?,
        }
        write!(f, ")")
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    /// A keyword or argument: unquoted, or quoted (with `+` concatenation).
    Str(String),
    Open,
    Close,
    /// `;`
    End,
}

/// YANG's lexical tokens (RFC 7950 §6.1), enough to follow statements.
struct Tokens<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Tokens<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    /// Skips white space and comments.
    fn skip_blank(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.at += rest.len() - trimmed.len();
            if trimmed.starts_with("//") {
                self.at += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if let Some(body) = trimmed.strip_prefix("/*") {
                self.at += 2 + body.find("*/").map_or(body.len(), |i| i + 2);
            } else {
                return;
            }
        }
    }

    fn next(&mut self) -> Option<Token> {
        self.skip_blank();
        let c = self.rest().chars().next()?;
        let token = match c {
            '{' => Token::Open,
            '}' => Token::Close,
            ';' => Token::End,
            '"' | '\'' => {
                let mut s = self.quoted();
                // "a" + "b" is one string.
                loop {
                    let before = self.at;
                    self.skip_blank();
                    let rest = self.rest();
                    if rest.starts_with('+') {
                        self.at += 1;
                        self.skip_blank();
                        if self.rest().starts_with(['"', '\'']) {
                            s.push_str(&self.quoted());
                            continue;
                        }
                    }
                    self.at = before;
                    break;
                }
                return Some(Token::Str(s));
            }
            _ => {
                let rest = self.rest();
                let mut end = rest.len();
                for (i, ch) in rest.char_indices() {
                    let r = &rest[i..];
                    if ch.is_whitespace()
                        || matches!(ch, '"' | '\'' | ';' | '{' | '}')
                        || r.starts_with("//")
                        || r.starts_with("/*")
                    {
                        end = i;
                        break;
                    }
                }
                self.at += end;
                return Some(Token::Str(rest[..end].to_string()));
            }
        };
        self.at += 1;
        Some(token)
    }

    /// A quoted string starting at the cursor, without its quotes; in double
    /// quotes a backslash escapes the next character. An unterminated string
    /// runs to the end of the text.
    fn quoted(&mut self) -> String {
        let rest = self.rest();
        let quote = rest.chars().next().expect("at a quote");
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1);
        let mut end = rest.len();
        while let Some((i, ch)) = chars.next() {
            if ch == quote {
                end = i + 1;
                break;
            }
            if ch == '\\' && quote == '"' {
                match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, e)) => out.push(e),
                    None => {}
                }
                continue;
            }
            out.push(ch);
        }
        self.at += end;
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn revisions(text: &str) -> Vec<String> {
        header(text).expect("a module").revisions
    }

    #[test]
    fn revision_arguments_quoted_or_not() {
        let text = "module b { namespace urn:b; prefix b;\n  revision \"2020-01-01\";\n  revision '2019-01-01';\n  revision 2018-01-01 { description \"first\"; }\n}";
        assert_eq!(revisions(text), ["2020-01-01", "2019-01-01", "2018-01-01"]);
        assert_eq!(revisions("module b{revision\"2021-02-03\";}"), ["2021-02-03"]);
        assert_eq!(revisions("module b { revision \"2021-\" + '02-03'; }"), ["2021-02-03"]);
    }

    #[test]
    fn the_newest_revision_is_the_modules_whatever_the_order() {
        let h = header("module b { revision 2019-06-01; revision 2021-01-01; revision 2020-01-01; }").unwrap();
        assert_eq!(h.revision(), Some("2021-01-01"));
        assert_eq!(header("module b { namespace urn:b; }").unwrap().revision(), None);
    }

    #[test]
    fn comments_strings_and_nested_statements_are_not_revisions() {
        let text = r#"// revision 2001-01-01;
/* module other { revision 2002-01-01; } */
module "b" {
  description "revision 2003-01-01; and a \" quote, revision 2004-01-01;";
  reference 'it says "revision 2005-01-01;"';
  import a { prefix a; revision-date 2006-01-01; }
  container c { ext:revision 2007-01-01; }
  grouping g { revision 2008-01-01; }
  revision 2010-01-01 { // revision 2009-01-01;
    description "the only one";
  }
  revision not-a-date;
}
revision 2011-01-01;"#;
        let h = header(text).unwrap();
        assert_eq!(h, Header { name: "b".into(), submodule: false, revisions: vec!["2010-01-01".into()] });
    }

    #[test]
    fn submodules_and_texts_that_are_no_module() {
        let h = header("submodule b-sub { belongs-to b { prefix b; } revision 2020-01-01; }").unwrap();
        assert_eq!((h.name.as_str(), h.submodule, h.revision()), ("b-sub", true, Some("2020-01-01")));
        assert_eq!(header(""), None);
        assert_eq!(header("container c { }"), None);
        assert_eq!(header("/* unterminated"), None);
        // A truncated module still says what it is.
        assert_eq!(header("module b { revision 2020-01-01; revis").unwrap().revisions, ["2020-01-01"]);
        assert_eq!(header("module b { description \"never closed").unwrap().name, "b");
    }

    /// A search directory holding `files` (path below it, text).
    pub(crate) fn dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = d.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    fn b(rev: &str) -> String {
        format!("module b {{ namespace urn:b; prefix b; revision {rev}; }}")
    }

    /// The file `find` chose, below the directory.
    fn chosen(d: &tempfile::TempDir, name: &str, revision: Option<&str>) -> Result<String, Vec<String>> {
        let files = Files::scan(&[d.path().to_path_buf()]);
        let strip = |p: &Path| p.strip_prefix(d.path()).unwrap().display().to_string();
        match files.find(name, revision, false) {
            Ok(f) => Ok(strip(&f.path)),
            Err(looked) => Err(looked
                .into_iter()
                .map(|l| Looked { path: PathBuf::from(strip(&l.path)), holds: l.holds }.to_string())
                .collect()),
        }
    }

    #[test]
    fn a_file_named_without_its_revision_is_found_by_what_it_holds() {
        let d = dir(&[("b.yang", &b("\"2020-01-01\"")), ("b-types.yang", &b("2020-01-01"))]);
        assert_eq!(chosen(&d, "b", Some("2020-01-01")), Ok("b.yang".into()));
        assert_eq!(chosen(&d, "b", None), Ok("b.yang".into()));
        assert_eq!(chosen(&d, "b", Some("2019-01-01")), Err(vec!["b.yang (revision 2020-01-01)".into()]));
        assert_eq!(chosen(&d, "c", None), Err(vec![]));
    }

    #[test]
    fn a_file_named_for_the_revision_is_preferred_if_it_holds_it() {
        let d = dir(&[("b.yang", &b("2020-01-01")), ("x/b@2020-01-01.yang", &b("2020-01-01"))]);
        assert_eq!(chosen(&d, "b", Some("2020-01-01")), Ok("x/b@2020-01-01.yang".into()));
        assert_eq!(chosen(&d, "b", None), Ok("x/b@2020-01-01.yang".into()));
        // A name that says another revision than the text is not believed.
        let d = dir(&[("b.yang", &b("2020-01-01")), ("b@2020-01-01.yang", &b("2019-01-01"))]);
        assert_eq!(chosen(&d, "b", Some("2020-01-01")), Ok("b.yang".into()));
        assert_eq!(chosen(&d, "b", Some("2019-01-01")), Ok("b@2020-01-01.yang".into()));
        std::fs::remove_file(d.path().join("b.yang")).unwrap();
        assert_eq!(
            chosen(&d, "b", Some("2020-01-01")),
            Err(vec!["b@2020-01-01.yang (named for revision 2020-01-01, holds revision 2019-01-01)".into()])
        );
    }

    #[test]
    fn without_a_revision_the_newest_is_taken() {
        let d = dir(&[
            ("a/b@2019-01-01.yang", &b("2019-01-01")),
            ("b.yang", "module b { revision 2018-01-01; revision 2021-01-01; }"),
            ("c/b@2020-01-01.yang", &b("2020-01-01")),
            ("d/b.yang", "module b { namespace urn:b; prefix b; }"),
        ]);
        assert_eq!(chosen(&d, "b", None), Ok("b.yang".into()));
        assert_eq!(chosen(&d, "b", Some("2021-01-01")), Ok("b.yang".into()));
        // Its older revision statement does not make the file that revision.
        assert_eq!(
            chosen(&d, "b", Some("2018-01-01")),
            Err(vec![
                "a/b@2019-01-01.yang (revision 2019-01-01)".to_string(),
                "b.yang (revision 2021-01-01)".to_string(),
                "c/b@2020-01-01.yang (revision 2020-01-01)".to_string(),
                "d/b.yang (no revision)".to_string(),
            ])
        );
    }

    #[test]
    fn another_name_or_kind_never_fits() {
        let d = dir(&[
            ("b.yang", "module c { revision 2020-01-01; }"),
            ("x/b.yang", "submodule b { belongs-to a { prefix a; } revision 2020-01-01; }"),
            ("y/b@2020-01-01.yang", "not yang"),
        ]);
        assert_eq!(
            chosen(&d, "b", Some("2020-01-01")),
            Err(vec![
                "b.yang (holds module c)".to_string(),
                "x/b.yang (holds submodule b)".to_string(),
                "y/b@2020-01-01.yang (no module statement)".to_string(),
            ])
        );
        let files = Files::scan(&[d.path().to_path_buf()]);
        let sub = files.find("b", Some("2020-01-01"), true).unwrap();
        assert!(sub.path.ends_with("x/b.yang"), "{}", sub.path.display());
        // A name that only starts like the module's is another module's.
        let d = dir(&[("bb.yang", &b("2020-01-01")), ("b-x@2020-01-01.yang", &b("2020-01-01"))]);
        assert_eq!(chosen(&d, "b", None), Err(vec![]));
    }

    #[test]
    fn dates() {
        assert!(is_date("2020-01-31"));
        for s in ["2020-1-31", "2020/01/31", "20200-1-31", "2020-01-3x", ""] {
            assert!(!is_date(s), "{s}");
        }
    }
}
