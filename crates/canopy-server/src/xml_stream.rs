//! XML replies written while they are read: a `Write` that takes the JSON
//! reply (`{"module:target": …}`, as `target::TargetOnly` passes it on) and
//! writes the XML reply that `encoding::data_reply_xml` makes of the whole of
//! it, byte for byte, holding one piece at a time.
//!
//! libyang converts the data (types, identityref prefixes, namespaces), but
//! it takes whole documents; so containers are opened and closed here, and
//! what lies in them is converted piece by piece: each list entry, each leaf
//! or leaf-list, each anydata node, at its parent's path. A piece's
//! top-level elements come from libyang with their namespace; where that is
//! the enclosing element's, the declaration is dropped, as libyang drops it
//! inside one document. An empty container is converted as a piece too (so
//! it prints as libyang prints it).

use std::collections::HashMap;
use std::io::{self, Write};

use canopy::Path;
use canopy_core::path::{Segment, Selector};
use canopy_core::schema::NodeKind;
use canopy_yang::{Encoding, YangSchema};

use crate::encoding::RESTCONF_NS;

/// A container whose element is open (or will be, with its first child).
struct Open {
    /// The element's local name, for the end tag; empty for the reply's
    /// top-level object.
    local: String,
    /// The member name as the JSON writes it (for an empty container's piece).
    key: String,
    /// Its path (the parent of its children's pieces).
    path: Path,
    /// Its schema node (`None`: the datastore root).
    node: Option<usize>,
    module: Option<String>,
    /// The default namespace inside it.
    ns: Option<String>,
    /// The start tag, written before the first child.
    start: String,
    written: bool,
}

enum Frame {
    Object(Open),
    /// The entries of a list, each a piece.
    List {
        key: String,
    },
}

/// The piece being gathered: its JSON text, its nesting depth, the member
/// it is, and whether it is one entry of a list.
struct Piece {
    text: Vec<u8>,
    depth: usize,
    key: String,
    entry: bool,
}

/// The JSON → XML writer (see the module's comment).
pub struct XmlStream<'a, W: Write> {
    out: W,
    yang: &'a YangSchema,
    namespaces: HashMap<String, String>,
    /// The path the top-level member sits under.
    base: Path,
    /// The datastore root as target: the reply is `<data>`.
    root: bool,
    stack: Vec<Frame>,
    /// The member name waiting for its value.
    key: Option<String>,
    /// Bytes not yet tokenized (a token cut by a write).
    pending: Vec<u8>,
    piece: Option<Piece>,
    started: bool,
}

impl<'a, W: Write> XmlStream<'a, W> {
    /// A writer of the XML reply for `target`.
    pub fn new(out: W, yang: &'a YangSchema, target: &Path) -> Self {
        let namespaces = yang
            .modules()
            .iter()
            .filter_map(|m| crate::library::namespace_of(&m.text).map(|n| (m.name.clone(), n)))
            .collect();
        XmlStream {
            out,
            yang,
            namespaces,
            base: target.parent().unwrap_or_default(),
            root: target.is_root(),
            stack: Vec::new(),
            key: None,
            pending: Vec::new(),
            piece: None,
            started: false,
        }
    }

    /// Ends the reply.
    ///
    /// # Errors
    /// JSON that ended early; write errors.
    pub fn finish(mut self) -> io::Result<W> {
        if !self.stack.is_empty() || !self.started {
            return Err(io::Error::other("the JSON reply ended early"));
        }
        self.out.write_all(b"\n")?;
        Ok(self.out)
    }

    fn top(&self) -> Option<&Open> {
        self.stack.iter().rev().find_map(|f| match f {
            Frame::Object(o) => Some(o),
            Frame::List { .. } => None,
        })
    }

    /// Writes the start tags of the open containers not yet written.
    fn open_all(&mut self) -> io::Result<()> {
        for f in &mut self.stack {
            if let Frame::Object(o) = f {
                if !o.written {
                    self.out.write_all(o.start.as_bytes())?;
                    o.written = true;
                }
            }
        }
        Ok(())
    }

    fn kind_of(&self, key: &str) -> (Option<usize>, Option<NodeKind>, Option<String>) {
        let Some(top) = self.top() else { return (None, None, None) };
        let canon = canopy_core::path::canonical_name(key, top.module.as_deref());
        let model = self.yang.model();
        match model.child(top.node, &canon) {
            Some(i) => (Some(i), Some(model.nodes[i].kind), Some(model.nodes[i].module.clone())),
            None => (None, None, None),
        }
    }

    /// Converts a piece (`{"key": value}` at the innermost container) and
    /// writes it.
    fn piece_out(&mut self, key: &str, value: &[u8]) -> io::Result<()> {
        let (path, ns) = match self.top() {
            Some(t) => (t.path.clone(), t.ns.clone()),
            None => return Err(io::Error::other("a value outside the reply object")),
        };
        let mut text = serde_json::to_vec(key).map_err(io::Error::other)?;
        text.insert(0, b'{');
        text.push(b':');
        text.extend_from_slice(value);
        text.push(b'}');
        let mut text = String::from_utf8(text).map_err(io::Error::other)?;
        if text.contains("\"@") {
            // Annotations inside the piece (RFC 7952 `@` members) are left out.
            let mut v: serde_json::Value = serde_json::from_str(&text).map_err(io::Error::other)?;
            crate::encoding::strip_meta(&mut v);
            text = v.to_string();
        }
        if path.is_root() && crate::encoding::is_own_node(key) && self.kind_of(key).1.is_none() {
            let v: serde_json::Value = serde_json::from_slice(value).map_err(io::Error::other)?;
            self.open_all()?;
            return self.out.write_all(crate::encoding::own_node_xml(key, v).as_bytes());
        }
        let nodes = self
            .yang
            .convert(&path, &text, Encoding::Json, Encoding::Xml)
            .map_err(|e| io::Error::other(format!("writing the reply in XML: {e}")))?;
        self.open_all()?;
        for node in nodes {
            let drop_ns = ns.as_deref().map(|n| format!(" xmlns=\"{n}\""));
            let mut node = node.as_str();
            let mut kept = String::new();
            // Each top-level element of the piece: drop a declaration of the
            // enclosing namespace from its start tag.
            if let Some(d) = &drop_ns {
                let wrapped = format!("<r>{node}</r>");
                let doc = roxmltree::Document::parse(&wrapped).ok();
                if let Some(doc) = doc {
                    let mut from = 0;
                    for el in doc.root_element().children().filter(roxmltree::Node::is_element) {
                        let start = el.range().start - 3;
                        let name_end = start + 1 + node[start + 1..].find([' ', '>', '/']).unwrap_or(0);
                        if node[name_end..].starts_with(d.as_str()) {
                            kept.push_str(&node[from..name_end]);
                            from = name_end + d.len();
                        }
                    }
                    kept.push_str(&node[from..]);
                    node = &kept;
                }
            }
            self.out.write_all(node.as_bytes())?;
        }
        Ok(())
    }

    fn token(&mut self, tok: &[u8]) -> io::Result<()> {
        if let Some(p) = &mut self.piece {
            p.text.extend_from_slice(tok);
            match tok[0] {
                b'{' | b'[' => p.depth += 1,
                b'}' | b']' => p.depth -= 1,
                _ => {}
            }
            if p.depth == 0 && !matches!(tok[0], b',' | b':') {
                let Some(mut p) = self.piece.take() else { return Ok(()) };
                if p.key.starts_with('@') {
                    return Ok(()); // annotations: XML carries them only in annotated replies
                }
                if p.entry {
                    p.text.insert(0, b'[');
                    p.text.push(b']');
                }
                return self.piece_out(&p.key, &p.text);
            }
            return Ok(());
        }
        match tok[0] {
            b',' | b':' => Ok(()),
            b'"' if self.key.is_none() && matches!(self.stack.last(), Some(Frame::Object(_))) => {
                self.key = Some(serde_json::from_slice(tok).map_err(io::Error::other)?);
                Ok(())
            }
            b'{' if self.stack.is_empty() => {
                if self.started {
                    return Err(io::Error::other("more than one JSON reply"));
                }
                self.started = true;
                // The reply's object: the XML declaration, then its member.
                let node = match self.base.is_root() {
                    true => None,
                    false => self.yang.model().by_path.get(&self.base.schema_path()).copied(),
                };
                let top = Open {
                    local: String::new(),
                    key: String::new(),
                    path: self.base.clone(),
                    node,
                    module: self.base.module().map(str::to_string),
                    ns: None,
                    start: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n".into(),
                    written: false,
                };
                self.stack.push(Frame::Object(top));
                Ok(())
            }
            b'{' if self.root && self.stack.len() == 1 => {
                // `ietf-restconf:data`: the datastore.
                self.key = None;
                self.stack.push(Frame::Object(Open {
                    local: "data".into(),
                    key: String::new(),
                    path: Path::root(),
                    node: None,
                    module: None,
                    ns: Some(RESTCONF_NS.into()),
                    start: format!("<data xmlns=\"{RESTCONF_NS}\">"),
                    written: false,
                }));
                Ok(())
            }
            b'{' => match self.stack.last() {
                Some(Frame::List { key }) => {
                    let key = key.clone();
                    self.piece = Some(Piece { text: b"{".to_vec(), depth: 1, key, entry: true });
                    Ok(())
                }
                _ => {
                    let key = self.key.take().ok_or_else(|| io::Error::other("an object without a name"))?;
                    let (node, kind, module) = self.kind_of(&key);
                    if kind != Some(NodeKind::Container) {
                        self.piece = Some(Piece { text: b"{".to_vec(), depth: 1, key, entry: false });
                        return Ok(());
                    }
                    let top = self.top().ok_or_else(|| io::Error::other("no parent"))?;
                    let local = key.rsplit(':').next().unwrap_or(&key).to_string();
                    let mut path = top.path.clone();
                    // Canonical: the module only where it changes.
                    let name = match key.split_once(':') {
                        Some((m, l)) if Some(m) == top.module.as_deref() => l.into(),
                        _ => key.as_str().into(),
                    };
                    path.segments.push(Segment { name, selector: Selector::None });
                    let own = module.as_ref().and_then(|m| self.namespaces.get(m)).cloned();
                    let start = match (&own, &top.ns) {
                        (Some(n), Some(p)) if n == p => format!("<{local}>"),
                        (Some(n), _) => format!("<{local} xmlns=\"{n}\">"),
                        (None, _) => format!("<{local}>"),
                    };
                    let ns = own.or_else(|| top.ns.clone());
                    self.stack.push(Frame::Object(Open { local, key, path, node, module, ns, start, written: false }));
                    Ok(())
                }
            },
            b'[' => {
                let key = self.key.take().ok_or_else(|| io::Error::other("an array without a name"))?;
                let (_, kind, _) = self.kind_of(&key);
                if kind == Some(NodeKind::List) {
                    self.stack.push(Frame::List { key });
                } else {
                    self.piece = Some(Piece { text: b"[".to_vec(), depth: 1, key, entry: false });
                }
                Ok(())
            }
            b']' => match self.stack.pop() {
                Some(Frame::List { .. }) => Ok(()),
                _ => Err(io::Error::other("unbalanced JSON")),
            },
            b'}' => match self.stack.pop() {
                Some(Frame::Object(o)) => {
                    if o.local.is_empty() {
                        // The reply's object: nothing to close.
                        return if o.written { Ok(()) } else { self.out.write_all(o.start.as_bytes()) };
                    }
                    if !o.written {
                        if o.path.is_root() && o.node.is_none() {
                            // An empty datastore.
                            self.open_all()?;
                            self.out.write_all(o.start.trim_end_matches('>').as_bytes())?;
                            return self.out.write_all(b"/>");
                        }
                        return self.piece_out(&o.key, b"{}");
                    }
                    write!(self.out, "</{}>", o.local)
                }
                _ => Err(io::Error::other("unbalanced JSON")),
            },
            _ => {
                let key = self.key.take().ok_or_else(|| io::Error::other("a value without a name"))?;
                if key.starts_with('@') {
                    return Ok(());
                }
                self.piece_out(&key, tok)
            }
        }
    }
}

impl<W: Write> Write for XmlStream<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let data = std::mem::take(&mut self.pending);
        let mut i = 0;
        while i < data.len() {
            let c = data[i];
            let end = match c {
                b' ' | b'\n' | b'\r' | b'\t' => {
                    i += 1;
                    continue;
                }
                b'{' | b'}' | b'[' | b']' | b',' | b':' => i + 1,
                b'"' => {
                    let mut j = i + 1;
                    let mut closed = None;
                    while j < data.len() {
                        match data[j] {
                            b'\\' => j += 2,
                            b'"' => {
                                closed = Some(j + 1);
                                break;
                            }
                            _ => j += 1,
                        }
                    }
                    match closed {
                        Some(e) => e,
                        None => break,
                    }
                }
                _ => {
                    let rest = &data[i..];
                    match rest.iter().position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')) {
                        Some(n) => i + n,
                        None => break,
                    }
                }
            };
            let tok = data[i..end].to_vec();
            self.token(&tok)?;
            i = end;
        }
        self.pending = data[i..].to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> YangSchema {
        let text = r#"module m { yang-version 1.1; namespace "urn:m"; prefix m;
            identity base; identity one { base base; }
            container top {
              leaf name { type string; }
              leaf kind { type identityref { base base; } }
              container empty { presence "on"; }
              leaf-list tags { type string; }
              list item { key "id"; leaf id { type uint32; } leaf note { type string; }
                container inner { leaf x { type int8; } } }
            }
        }"#;
        let m = canopy_yang::Module { name: "m".into(), revision: None, implemented: true, text: text.into() };
        YangSchema::from_modules(&[m]).unwrap()
    }

    const DOC: &str = r#"{
  "ietf-restconf:data": {
    "m:top": {
      "empty": {},
      "item": [
        {
          "id": 1,
          "inner": {
            "x": -3
          },
          "note": "a \"quoted\" {note}"
        },
        {
          "id": 2
        }
      ],
      "kind": "m:one",
      "name": "n",
      "tags": ["a", "b"]
    }
  }
}"#;

    fn xml(y: &YangSchema, path: &Path, json: &str, step: usize) -> String {
        let mut x = XmlStream::new(Vec::new(), y, path);
        for piece in json.as_bytes().chunks(step) {
            x.write_all(piece).unwrap();
        }
        String::from_utf8(x.finish().unwrap()).unwrap()
    }

    #[test]
    fn pieces_make_the_document_whatever_the_writes() {
        let y = schema();
        let whole = xml(&y, &Path::root(), DOC, DOC.len());
        assert!(whole.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<data xmlns=\"urn:ietf:params:xml:ns:yang:ietf-restconf\"><top xmlns=\"urn:m\">"), "{whole}");
        assert!(whole.contains("<empty/><item><id>1</id><note>a \"quoted\" {note}</note><inner><x>-3</x></inner></item><item><id>2</id></item>"), "{whole}");
        assert!(whole.contains("<tags>a</tags><tags>b</tags>"), "{whole}");
        assert!(whole.contains("<kind>one</kind>"), "{whole}"); // the default namespace is m's
        assert!(whole.ends_with("</top></data>\n"), "{whole}");
        roxmltree::Document::parse(&whole).unwrap();
        // Writes cut tokens anywhere: the same bytes.
        for step in [1, 2, 3, 7] {
            assert_eq!(xml(&y, &Path::root(), DOC, step), whole, "writes of {step} bytes");
        }
        // Annotations are left out.
        let annotated = DOC
            .replace("\"name\": \"n\",", "\"name\": \"n\", \"@name\": {\"x:y\": 1},")
            .replace("\"id\": 2", "\"id\": 2, \"@\": {\"x:y\": 1}, \"@id\": {\"x:y\": 2}");
        assert_ne!(annotated, DOC);
        assert_eq!(xml(&y, &Path::root(), &annotated, 3), whole);
        // An empty datastore, and JSON that ends early.
        let empty = xml(&y, &Path::root(), "{\"ietf-restconf:data\": {}}", 5);
        assert_eq!(
            empty,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<data xmlns=\"urn:ietf:params:xml:ns:yang:ietf-restconf\"/>\n"
        );
        let mut x = XmlStream::new(Vec::new(), &y, &Path::root());
        x.write_all(&DOC.as_bytes()[..DOC.len() / 2]).unwrap();
        assert!(x.finish().is_err());
    }
}
