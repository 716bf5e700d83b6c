//! RESTCONF GET replies (JSON) written while they are read: the engine's
//! streamed read (`Session::get_json`, pretty) writes the target with its
//! ancestors; [`TargetOnly`] passes on the target's lines alone, named with
//! its module and moved up to the reply's top level, which gives byte for
//! byte what `output::write_target` writes from the tree.
//!
//! This works on lines because the pretty writer puts every member and every
//! bracket that holds something on a line of its own, indented two spaces
//! per level, and escapes newlines inside strings: the target is the member
//! line at its level that carries its name, up to the line at the same level
//! that closes it.

use std::io::{self, Write};

use canopy::Path;

/// Where the filter is in the engine's document.
#[derive(PartialEq)]
enum At {
    Before,
    Inside,
    After,
}

/// A `Write` that turns the engine's pretty JSON of `path` (with its
/// ancestors) into the RESTCONF reply for `path` (see the module's comment).
pub struct TargetOnly<W: Write> {
    out: W,
    /// The unfinished last line.
    line: Vec<u8>,
    /// The target's indentation in the engine's document; `None` for the
    /// root, whose members all go under `ietf-restconf:data`.
    indent: Option<usize>,
    /// `"name": ` as the engine writes the target's member.
    key: Vec<u8>,
    /// `"module:name": `, as the reply names it.
    qualified: Vec<u8>,
    at: At,
    lines: usize,
}

fn quoted_key(name: &str) -> Vec<u8> {
    let mut k = serde_json::to_vec(name).unwrap_or_default();
    k.extend_from_slice(b": ");
    k
}

impl<W: Write> TargetOnly<W> {
    /// A filter for the reply to `path` (canonical, as the engine writes
    /// it: containers and keyed entries, or the root).
    pub fn new(out: W, path: &Path) -> TargetOnly<W> {
        let (indent, key, qualified) = match path.last() {
            None => (None, Vec::new(), quoted_key("ietf-restconf:data")),
            Some(last) => {
                // The document's object, then one level per container and two per entry.
                let levels: usize = 1 + path.segments[..path.segments.len() - 1]
                    .iter()
                    .map(|s| if matches!(s.selector, canopy_core::path::Selector::Keys(_)) { 2 } else { 1 })
                    .sum::<usize>();
                let q = crate::uri::qualified_name(path).unwrap_or_else(|| last.name.to_string());
                (Some(levels * 2), quoted_key(&last.name), quoted_key(&q))
            }
        };
        TargetOnly { out, line: Vec::new(), indent, key, qualified, at: At::Before, lines: 0 }
    }

    fn emit(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        for p in parts {
            self.out.write_all(p)?;
        }
        Ok(())
    }

    fn line_done(&mut self) -> io::Result<()> {
        let line = std::mem::take(&mut self.line);
        self.lines += 1;
        let Some(indent) = self.indent else { return self.root_line(&line) };
        let at_level = line.len() > indent && line[..indent].iter().all(|&b| b == b' ') && line[indent] != b' ';
        match self.at {
            At::Before if at_level && line[indent..].starts_with(&self.key) => {
                let rest = &line[indent + self.key.len()..];
                let opens = matches!(rest.last(), Some(b'{' | b'['));
                let rest = if opens { rest } else { rest.strip_suffix(b",").unwrap_or(rest) };
                let q = self.qualified.clone();
                self.emit(&[b"{\n  ", &q, rest])?;
                self.at = if opens { At::Inside } else { At::After };
            }
            At::Inside if at_level => {
                let rest = &line[indent..];
                self.emit(&[b"\n  ", rest.strip_suffix(b",").unwrap_or(rest)])?;
                self.at = At::After;
            }
            At::Inside => {
                let inner = line.get(indent..).unwrap_or_default();
                self.emit(&[b"\n  ", inner])?;
            }
            _ => {}
        }
        self.line = line;
        self.line.clear();
        Ok(())
    }

    /// The root: `{` opens the reply, every member moves one level down.
    fn root_line(&mut self, line: &[u8]) -> io::Result<()> {
        let q = self.qualified.clone();
        match (self.lines, line) {
            (1, b"{}") => {
                self.emit(&[b"{\n  ", &q, b"{}"])?;
                self.at = At::After;
            }
            (1, b"{") => {
                self.emit(&[b"{\n  ", &q, b"{"])?;
                self.at = At::Inside;
            }
            (_, b"}") if self.at == At::Inside => {
                self.emit(&[b"\n  }"])?;
                self.at = At::After;
            }
            (_, line) if self.at == At::Inside => self.emit(&[b"\n  ", line])?,
            _ => {}
        }
        Ok(())
    }

    /// Ends the reply.
    ///
    /// # Errors
    /// The target never came (it was deleted after the reply was decided);
    /// write errors.
    pub fn finish(mut self) -> io::Result<W> {
        if !self.line.is_empty() {
            self.line_done()?;
        }
        if self.at != At::After {
            return Err(io::Error::other("the target was not in the data read"));
        }
        self.out.write_all(b"\n}\n")?;
        Ok(self.out)
    }
}

impl<W: Write> Write for TargetOnly<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while let Some(i) = memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..i]);
            self.line_done()?;
            rest = &rest[i + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy::{ListInfo, ReadOptions, Store};
    use canopy_core::tree::NodeRef;

    fn streamed(s: &Store, path: &Path) -> String {
        let mut t = TargetOnly::new(Vec::new(), path);
        s.running().get_json(&path.to_string(), ReadOptions::default(), true, &mut t).unwrap();
        String::from_utf8(t.finish().unwrap()).unwrap()
    }

    fn buffered(s: &Store, path: &Path) -> String {
        let tree = s.running().get(&path.to_string(), ReadOptions::default()).unwrap();
        let node = if path.is_root() { NodeRef::Root(&tree) } else { tree.lookup(path).unwrap() };
        let mut out = Vec::new();
        crate::output::write_target(&mut out, path, node, true).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The filtered stream is byte for byte what the reply writer writes
    /// from the tree.
    #[test]
    fn the_target_alone_is_the_reply() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
        let root = Path::root();
        assert_eq!(streamed(&s, &root), buffered(&s, &root), "empty store");
        s.declare_list("/m:c/e", ListInfo::keyed(["a", "b"])).unwrap();
        s.declare_list("/m:c/e/lst", ListInfo::keyed(["n"])).unwrap();
        s.declare_list("/m:top", ListInfo::keyed(["k"])).unwrap();
        let doc = serde_json::json!({
            "m:top": [{"k": "x", "v": 1}, {"k": "y", "sub": {"deep": [1, 2], "@": {"m:o": "1"}}, "v": 2, "@v": {"m:o": "2"}}],
            "m:c": {
                "aa": "before",
                "e": [
                    {"a": "1", "b": "z", "lst": [{"n": "p", "q": true}, {"n": "o"}], "zz": "after\nline"},
                    {"a": "10", "b": "a", "lst": [{"n": "only"}], "empty": {}, "any": {"x": [1, 2], "y": "s"}}
                ],
                "mid": {"x": "y"},
                "zz": "z",
                "@": {"m:note": "c"}
            },
            "m:d": {}
        });
        s.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
        for p in [
            "/",
            "/m:c",
            "/m:c/mid",
            "/m:c/e[a='1'][b='z']",
            "/m:c/e[a='10'][b='a']",
            "/m:c/e[a='10'][b='a']/empty",
            "/m:c/e[a='1'][b='z']/lst[n='p']",
            "/m:top[k='y']",
            "/m:top[k='y']/sub",
            "/m:d",
        ] {
            let path: Path = p.parse().unwrap();
            assert_eq!(streamed(&s, &path), buffered(&s, &path), "{p}");
        }
        // A target not in the data read is an error, not an empty reply.
        let mut t = TargetOnly::new(Vec::new(), &"/m:nothing".parse().unwrap());
        s.running().get_json("/m:nothing", ReadOptions::default(), true, &mut t).unwrap();
        assert!(t.finish().is_err());
    }
}
