//! What a YANG text says about itself (its name and revisions), read without
//! libyang so that candidate files can be told apart before one is parsed.

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
mod tests {
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

    #[test]
    fn dates() {
        assert!(is_date("2020-01-31"));
        for s in ["2020-1-31", "2020/01/31", "20200-1-31", "2020-01-3x", ""] {
            assert!(!is_date(s), "{s}");
        }
    }
}
