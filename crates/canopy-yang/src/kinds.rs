//! RFC 7951 section 6: the JSON kind each value is written in. The library
//! reads values leniently (a `uint16` given as the string `"2011"` is taken,
//! as a path's key is); a server that speaks RFC 7951 refuses a document
//! whose values are written in another kind than their type's, as libyang
//! does.

use canopy_core::edit::Edit;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, Node};
use canopy_core::Value;

use crate::values::JsonKind;
use crate::{Violation, YangSchema};
use canopy_core::schema::NodeKind;

impl YangSchema {
    /// Checks that every value `edit` carries (as read from an RFC 7951
    /// document) is written in the JSON kind its type takes: numbers for
    /// `int8`–`int32` and `uint8`–`uint32`, strings for the 64-bit types,
    /// `decimal64` and the rest, `true`/`false` for `boolean`, `[null]` for
    /// `empty`. Unions take any kind. Nodes the schema does not have are
    /// left to [`YangSchema::normalize_edit`], which reports them.
    pub fn check_json_kinds(&self, edit: &Edit) -> Vec<Violation> {
        let mut errs = Vec::new();
        let (Some(value), Ok((path, idxs))) = (&edit.value, self.resolve_path(&edit.path)) else {
            return errs;
        };
        self.kinds_node(idxs.last().copied(), &path, value, &mut errs);
        errs
    }

    fn kinds_node(&self, at: Option<usize>, path: &Path, node: &Node, errs: &mut Vec<Violation>) {
        match node {
            Node::Container(c) => self.kinds_children(at, path, c, errs),
            Node::List(l) => {
                for e in l.entries() {
                    // Messages name the entry by its keys.
                    let mut entry = path.clone();
                    if let (Some(last), Some(vals)) = (entry.segments.last_mut(), e.key_values(&l.info)) {
                        if !vals.is_empty() {
                            last.selector = Selector::Keys(l.info.keys.iter().cloned().zip(vals).collect());
                        }
                    }
                    self.kinds_children(at, &entry, e, errs);
                }
            }
            Node::Leaf { value, .. } => {
                if let Some(i) = at {
                    self.kinds_value(i, path, value, errs);
                }
            }
            Node::LeafList(entries) => {
                if let Some(i) = at {
                    for e in entries {
                        self.kinds_value(i, path, &e.value, errs);
                    }
                }
            }
            Node::AnyData { .. } => {}
        }
    }

    fn kinds_children(&self, parent: Option<usize>, path: &Path, c: &Container, errs: &mut Vec<Violation>) {
        if parent.is_some_and(|p| self.model.nodes[p].kind == NodeKind::AnyData) {
            return;
        }
        for (name, child) in c.children.iter() {
            let Some(ci) = self.model.child(parent, name) else { continue };
            let n = &self.model.nodes[ci];
            if n.kind == NodeKind::AnyData {
                continue;
            }
            self.kinds_node(Some(ci), &path.child(n.name.clone(), Selector::None), child, errs);
        }
    }

    fn kinds_value(&self, idx: usize, path: &Path, value: &Value, errs: &mut Vec<Violation>) {
        let n = &self.model.nodes[idx];
        let Some(want) = n.json_kind else { return };
        let given = JsonKind::of_value(value);
        if given != want {
            errs.push(Violation {
                path: path.to_string(),
                reason: format!(
                    "invalid value '{value}': {} takes {} (RFC 7951 section 6), not {}",
                    n.path,
                    want.name(),
                    given.name()
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use canopy_core::edit::Operation;
    use canopy_core::schema::Schemaless;

    use super::*;

    const MODULE: &str = r#"module k { namespace urn:k; prefix k;
  typedef year { type uint16 { range "1900..max"; } }
  container c {
    leaf small { type k:year; }
    leaf big { type int64; }
    leaf dec { type decimal64 { fraction-digits 2; } }
    leaf flag { type boolean; }
    leaf on { type empty; }
    leaf either { type union { type uint8; type string; } }
    leaf ref { type leafref { path "../small"; } }
    leaf-list ns { type int32; }
    list e { key name; leaf name { type string; } leaf n { type uint8; } }
  }
}"#;

    fn schema() -> YangSchema {
        YangSchema::add_texts(&[], &[("k.yang".into(), MODULE.into())], &[]).unwrap()
    }

    /// The messages of the edit merging `json` at `/k:c`.
    fn check(s: &YangSchema, json: &str) -> Vec<String> {
        let at: Path = "/k:c".parse().unwrap();
        let lists = Schemaless { lists: s.lists() };
        let value = canopy_core::json::parse_subtree_str(json, &lists, &at).unwrap();
        let edit = Edit { op: Operation::Merge, path: at, value: Some(value), insert: None };
        s.check_json_kinds(&edit).into_iter().map(|v| format!("{}: {}", v.path, v.reason)).collect()
    }

    #[test]
    fn values_in_their_types_kinds_pass() {
        let s = schema();
        let doc = r#"{"k:c":{"small":2011,"big":"5","dec":"1.5","flag":true,"on":[null],"either":7,
            "ref":2011,"ns":[1,2],"e":[{"name":"a","n":3}]}}"#;
        assert_eq!(check(&s, doc), Vec::<String>::new());
        // A union takes either kind.
        assert_eq!(check(&s, r#"{"k:c":{"either":"7"}}"#), Vec::<String>::new());
    }

    #[test]
    fn values_in_other_kinds_are_named() {
        let s = schema();
        let got = check(
            &s,
            r#"{"k:c":{"small":"2011","big":5,"dec":1.5,"flag":"true","ref":"1","ns":["1"],"e":[{"name":"a","n":"3"}]}}"#,
        );
        let expect = [
            "/k:c/big: invalid value '5': /k:c/big takes a JSON string (RFC 7951 section 6), not a JSON number",
            "/k:c/dec: invalid value '1.5': /k:c/dec takes a JSON string (RFC 7951 section 6), not a JSON number",
            "/k:c/e[name='a']/n: invalid value '3': /k:c/e/n takes a JSON number (RFC 7951 section 6), not a JSON string",
            "/k:c/flag: invalid value 'true': /k:c/flag takes a JSON boolean (RFC 7951 section 6), not a JSON string",
            "/k:c/ns: invalid value '1': /k:c/ns takes a JSON number (RFC 7951 section 6), not a JSON string",
            "/k:c/ref: invalid value '1': /k:c/ref takes a JSON number (RFC 7951 section 6), not a JSON string",
            "/k:c/small: invalid value '2011': /k:c/small takes a JSON number (RFC 7951 section 6), not a JSON string",
        ];
        let mut got = got;
        got.sort();
        assert_eq!(got, expect);
    }
}
