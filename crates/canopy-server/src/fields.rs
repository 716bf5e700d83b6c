//! The `fields` query parameter (RFC 8040, section 4.8.3): which descendants
//! of the target a read returns, as `a;b/c;d(e;f/g)`.

use canopy_core::tree::{Container, Node};

/// A selection of child nodes; an empty selection below a name takes the
/// node whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// Each selected child by its name as written (`name` or `mod:name`).
    pub children: Vec<(String, Fields)>,
}

impl Fields {
    /// Parses a fields expression.
    ///
    /// # Errors
    /// Why it does not parse, with the position.
    pub fn parse(text: &str) -> Result<Fields, String> {
        let mut p = Parser { s: text.as_bytes(), pos: 0 };
        let f = p.list()?;
        if p.pos != p.s.len() {
            return Err(format!("unexpected `{}` at position {}", p.s[p.pos] as char, p.pos + 1));
        }
        Ok(f)
    }

    fn add(&mut self, names: &[String], sub: Fields) {
        let Some((first, rest)) = names.split_first() else { return };
        let slot = match self.children.iter().position(|(n, _)| n == first) {
            Some(i) => &mut self.children[i].1,
            None => {
                self.children.push((first.clone(), Fields::default()));
                &mut self.children.last_mut().expect("just pushed").1
            }
        };
        if rest.is_empty() {
            slot.children.extend(sub.children);
        } else {
            slot.add(rest, sub);
        }
    }

    /// Checks that every name is a child node in the YANG schema, below the
    /// schema node `parent` (`None`: the top level) of `module`.
    ///
    /// # Errors
    /// The first name that is no child node.
    pub fn check(
        &self,
        model: &canopy_yang::model::Model,
        parent: Option<usize>,
        module: Option<&str>,
    ) -> Result<(), String> {
        for (name, sub) in &self.children {
            let canon = canopy_core::path::canonical_name(name, module);
            let Some(idx) = model.child(parent, &canon) else {
                return Err(format!("`{name}` is not a child node here"));
            };
            sub.check(model, Some(idx), Some(model.nodes[idx].module.as_str()))?;
        }
        Ok(())
    }

    /// Keeps the children of `c` this selection names (list entries keep
    /// their keys). `module`: the module of `c` (names in that module may be
    /// written with or without it).
    pub fn apply(&self, c: &mut Container, module: Option<&str>) {
        if self.children.is_empty() {
            return;
        }
        let local = |name: &str| -> String {
            match (name.split_once(':'), module) {
                (Some((m, l)), Some(cur)) if m == cur => l.to_string(),
                _ => name.to_string(),
            }
        };
        let wanted: Vec<(String, &Fields)> = self.children.iter().map(|(n, f)| (local(n), f)).collect();
        c.children.retain(|name, node| {
            let Some((_, sub)) = wanted.iter().find(|(n, _)| n == name) else { return false };
            let m = name.split_once(':').map(|(m, _)| m).or(module);
            match node {
                Node::Container(inner) => sub.apply(inner, m),
                Node::List(list) => {
                    let keys = list.info.keys.clone();
                    crate::filter::retain_entries(list, |e| {
                        let key_leaves: Vec<(canopy_core::tree::Name, Node)> =
                            keys.iter().filter_map(|k| e.children.get(k).map(|v| (k.clone(), v.clone()))).collect();
                        sub.apply(e, m);
                        for (k, v) in key_leaves {
                            if e.children.get(&k).is_none() {
                                e.children.insert(k, v);
                            }
                        }
                        true
                    });
                }
                _ => {}
            }
            true
        });
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn list(&mut self) -> Result<Fields, String> {
        let mut out = Fields::default();
        loop {
            let names = self.path()?;
            let mut sub = Fields::default();
            if self.peek() == Some(b'(') {
                self.pos += 1;
                sub = self.list()?;
                if self.peek() != Some(b')') {
                    return Err(format!("missing `)` at position {}", self.pos + 1));
                }
                self.pos += 1;
            }
            out.add(&names, sub);
            match self.peek() {
                Some(b';') => self.pos += 1,
                _ => return Ok(out),
            }
        }
    }

    fn path(&mut self) -> Result<Vec<String>, String> {
        let mut names = vec![self.ident()?];
        while self.peek() == Some(b'/') {
            self.pos += 1;
            names.push(self.ident()?);
        }
        Ok(names)
    }

    fn ident(&mut self) -> Result<String, String> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':') {
                self.pos += 1;
            } else {
                break;
            }
        }
        let name = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default();
        if !canopy_core::path::is_valid_name(name) {
            return Err(format!("expected a node name at position {}", start + 1));
        }
        Ok(name.to_string())
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_parse_into_nested_selections() {
        let f = Fields::parse("a;b/c;d(e;f/g)").unwrap();
        let names: Vec<&str> = f.children.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "d"]);
        assert_eq!(f.children[1].1.children[0].0, "c");
        assert_eq!(f.children[2].1.children.len(), 2);
        for bad in ["", "a;", "a(b", "a)b", "1a", "a//b"] {
            assert!(Fields::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn selections_keep_list_keys() {
        let schema = canopy_core::Schemaless {
            lists: [("/m:top/l".to_string(), canopy_core::ListInfo::keyed(["k"]))].into_iter().collect(),
        };
        let doc = r#"{"m:top":{"x":1,"l":[{"k":"a","v":1,"w":2}]}}"#;
        let tree = canopy_core::json::parse_str(doc, &schema).unwrap();
        let Some(Node::Container(mut top)) = tree.children.get("m:top").cloned() else { panic!() };
        Fields::parse("m:l(w)").unwrap().apply(&mut top, Some("m"));
        let mut root = Container::default();
        root.children.insert("m:top".into(), Node::Container(top));
        let out = canopy_core::json::to_string(&root, &Default::default());
        assert_eq!(out, r#"{"m:top":{"l":[{"k":"a","w":2}]}}"#);
    }
}
