//! Tests of the RFC 7951 codec: examples, malformed input, depth, subtrees,
//! the streaming writer, and property tests (round trip, no panics).

use std::io::Read;

use proptest::prelude::*;

use super::*;
use crate::error::Error;
use crate::path::{Path, Selector};
use crate::schema::{NodeKind, Schema, Schemaless};
use crate::tree::{Container, Insert, LeafListEntry, List, ListInfo, Node};
use crate::value::{Meta, Value};

/// A schema that reads a node's kind from its local name without trailing
/// digits: `f` leaf, `ll` leaf-list, `any` anydata, `c` container, lists `lx`
/// (keyless), `lsa`/`lsb` (system-ordered, keys `k1` / `k1 k2`), `lua`/`lub`
/// (user-ordered, same keys). Other names are unknown to it.
struct NameSchema;

fn base_name(schema_path: &str) -> &str {
    let last = schema_path.rsplit('/').next().unwrap_or("");
    let local = last.split_once(':').map_or(last, |(_, l)| l);
    local.trim_end_matches(|c: char| c.is_ascii_digit())
}

impl Schema for NameSchema {
    fn kind(&self, schema_path: &str) -> Option<NodeKind> {
        Some(match base_name(schema_path) {
            "f" => NodeKind::Leaf,
            "ll" => NodeKind::LeafList,
            "any" => NodeKind::AnyData,
            "c" => NodeKind::Container,
            "lx" | "lsa" | "lsb" | "lua" | "lub" => NodeKind::List,
            _ => return None,
        })
    }

    fn list_info(&self, schema_path: &str) -> Option<ListInfo> {
        Some(match base_name(schema_path) {
            "lx" => ListInfo::keyless(),
            "lsa" => ListInfo::keyed(["k1"]),
            "lsb" => ListInfo::keyed(["k1", "k2"]),
            "lua" => ListInfo { keys: vec!["k1".into()], user_ordered: true },
            "lub" => ListInfo { keys: vec!["k1".into(), "k2".into()], user_ordered: true },
            _ => return None,
        })
    }
}

/// A reader that hands out at most `n` bytes per call, to cross buffer refills
/// inside every token.
struct Chunked<'a> {
    data: &'a [u8],
    n: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.n.min(buf.len()).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

fn compact() -> WriteOptions {
    WriteOptions::default()
}

fn meta(pairs: &[(&str, &str)]) -> Meta {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn num(s: &str) -> Value {
    Value::Number(s.into())
}

fn child<'a>(c: &'a Container, name: &str) -> &'a Node {
    c.children.get(name).unwrap_or_else(|| panic!("no child `{name}` in {c:?}"))
}

fn container<'a>(c: &'a Container, name: &str) -> &'a Container {
    match child(c, name) {
        Node::Container(c) => c,
        other => panic!("`{name}` is not a container: {other:?}"),
    }
}

// ---- RFC 7951 / RFC 7952 examples ----

#[test]
fn rfc7951_module_qualified_names() {
    // RFC 7951 §4: a prefix appears where the module changes.
    let doc = r#"{"example-foomod:top":{"foo":54,"example-barmod:bar":true}}"#;
    let root = parse_str(doc, &Schemaless::default()).unwrap();
    let top = container(&root, "example-foomod:top");
    assert_eq!(child(top, "foo"), &Node::leaf(num("54")));
    assert_eq!(child(top, "example-barmod:bar"), &Node::leaf(Value::Bool(true)));
    // Written in name order.
    assert_eq!(to_string(&root, &compact()), r#"{"example-foomod:top":{"example-barmod:bar":true,"foo":54}}"#);
}

#[test]
fn redundant_prefixes_are_dropped() {
    let root = parse_str(r#"{"m:top":{"m:foo":1,"n:bar":{"n:baz":2,"m:qux":3}}}"#, &Schemaless::default()).unwrap();
    assert_eq!(to_string(&root, &compact()), r#"{"m:top":{"foo":1,"n:bar":{"baz":2,"m:qux":3}}}"#);
}

#[test]
fn empty_value_and_strings_for_64_bit_numbers() {
    let doc = r#"{"m:e":[null],"m:big":"-9223372036854775808","m:dec":"1.50","m:n":1.50,"m:x":2E+3}"#;
    let root = parse_str(doc, &Schemaless::default()).unwrap();
    assert_eq!(child(&root, "m:e"), &Node::leaf(Value::Empty));
    assert_eq!(child(&root, "m:big"), &Node::leaf(Value::String("-9223372036854775808".into())));
    assert_eq!(child(&root, "m:dec"), &Node::leaf(Value::String("1.50".into())));
    // Numbers keep their text; only the exponent letter is canonicalised.
    assert_eq!(child(&root, "m:n"), &Node::leaf(num("1.50")));
    assert_eq!(child(&root, "m:x"), &Node::leaf(num("2e+3")));
}

#[test]
fn lists_and_leaf_lists() {
    let schema = Schemaless { lists: [("/m:c/lst".to_string(), ListInfo::keyed(["name"]))].into() };
    let doc =
        r#"{"m:c":{"lst":[{"name":"b","v":2},{"name":"a","v":1}],"kl":[{"x":1},{"x":1}],"ll":["a",1,true,[null]]}}"#;
    let root = parse_str(doc, &schema).unwrap();
    let c = container(&root, "m:c");
    let Node::List(lst) = child(c, "lst") else { panic!() };
    assert_eq!(lst.info, ListInfo::keyed(["name"]));
    // System-ordered: by key.
    let names: Vec<_> = lst.entries().map(|e| e.key_text("name").unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    // Unknown list: keyless, entries by position, duplicates allowed.
    let Node::List(kl) = child(c, "kl") else { panic!() };
    assert_eq!(kl.info, ListInfo::keyless());
    assert_eq!(kl.len(), 2);
    let Node::LeafList(ll) = child(c, "ll") else { panic!() };
    let vals: Vec<_> = ll.iter().map(|e| e.value.clone()).collect();
    assert_eq!(vals, [Value::String("a".into()), num("1"), Value::Bool(true), Value::Empty]);
}

#[test]
fn empty_arrays_are_lists_only_when_the_schema_says_so() {
    let schema = Schemaless { lists: [("/m:lst".to_string(), ListInfo::keyed(["k"]))].into() };
    let root = parse_str(r#"{"m:lst":[],"m:other":[]}"#, &schema).unwrap();
    assert_eq!(child(&root, "m:lst"), &Node::List(Box::new(List::new(ListInfo::keyed(["k"])))));
    assert!(!root.children.contains_key("m:other"));
}

#[test]
fn anydata_is_kept_as_json() {
    // serde_json's numbers spell exponents with a sign: `1.0e+5`.
    let doc = r#"{"any1":{"b":[1,null,{"x":"y"}],"a":1.0e+5},"@any1":{"m:a":"1"}}"#;
    let root = parse_str(doc, &NameSchema).unwrap();
    let Node::AnyData { value, meta: m } = child(&root, "any1") else { panic!() };
    assert_eq!(&**value, &serde_json::from_str::<serde_json::Value>(r#"{"b":[1,null,{"x":"y"}],"a":1.0e+5}"#).unwrap());
    assert_eq!(m, &meta(&[("m:a", "1")]));
    // Member order inside anydata is kept.
    assert_eq!(to_string(&root, &compact()), doc);
}

#[test]
fn rfc7952_annotations() {
    let doc = r#"{
      "m:cask": {
        "@": {"m:version": "2.3"},
        "beer": 42,
        "@beer": {"m:version": 2.4, "o:ok": true},
        "seen-by": ["Alice", "Bob", "Eve"],
        "@seen-by": [{"m:label": "x"}, null],
        "lst": [{"@": {"o:origin": "intended"}, "k": 1}]
      }
    }"#;
    let root = parse_str(doc, &Schemaless::default()).unwrap();
    let cask = container(&root, "m:cask");
    assert_eq!(cask.meta, meta(&[("m:version", "2.3")]));
    assert_eq!(
        child(cask, "beer"),
        &Node::Leaf { value: num("42"), meta: meta(&[("m:version", "2.4"), ("o:ok", "true")]) }
    );
    let Node::LeafList(seen) = child(cask, "seen-by") else { panic!() };
    assert_eq!(seen[0].meta, meta(&[("m:label", "x")]));
    assert!(seen[1].meta.is_empty() && seen[2].meta.is_empty());
    let Node::List(lst) = child(cask, "lst") else { panic!() };
    assert_eq!(lst.entries().next().unwrap().meta, meta(&[("o:origin", "intended")]));
    // Written back: values of annotations are text.
    assert_eq!(
        to_string(&root, &compact()),
        r#"{"m:cask":{"@":{"m:version":"2.3"},"beer":42,"@beer":{"m:version":"2.4","o:ok":"true"},"lst":[{"@":{"o:origin":"intended"},"k":1}],"seen-by":["Alice","Bob","Eve"],"@seen-by":[{"m:label":"x"},null,null]}}"#
    );
}

#[test]
fn annotation_may_precede_its_member() {
    let root = parse_str(r#"{"@m:a":{"m:x":"1"},"m:a":5}"#, &Schemaless::default()).unwrap();
    assert_eq!(child(&root, "m:a"), &Node::Leaf { value: num("5"), meta: meta(&[("m:x", "1")]) });
}

#[test]
fn pretty_output() {
    let root = parse_str(r#"{"m:c":{"l":[1,2],"e":{},"k":[],"s":"x"}}"#, &Schemaless::default()).unwrap();
    let pretty = WriteOptions { pretty: true, depth: None };
    let expected =
        "{\n  \"m:c\": {\n    \"e\": {},\n    \"l\": [\n      1,\n      2\n    ],\n    \"s\": \"x\"\n  }\n}\n";
    assert_eq!(to_string(&root, &pretty), expected);
    assert_eq!(parse_str(expected, &Schemaless::default()).unwrap(), root);
}

#[test]
fn escapes_are_decoded_and_written_back() {
    let doc = r#"{"a":"q\" b\\ s\/ \b\f\n\r\t \u00e9 \ud83d\ude00 \u0001"}"#;
    let root = parse_str(doc, &Schemaless::default()).unwrap();
    assert_eq!(child(&root, "a"), &Node::leaf(Value::String("q\" b\\ s/ \u{8}\u{c}\n\r\t é 😀 \u{1}".into())));
    assert_eq!(to_string(&root, &compact()), r#"{"a":"q\" b\\ s/ \u0008\u000c\n\r\t é 😀 \u0001"}"#);
    let mut s = String::new();
    write_json_string(&mut s, "a\"\u{1f}");
    assert_eq!(s, r#""a\"\u001f""#);
}

// ---- malformed documents ----

/// Parses `input` expecting a JSON error; returns (line, column, reason).
fn json_err(input: &[u8], chunk: usize) -> (usize, usize, String) {
    match parse_document(Chunked { data: input, n: chunk }, &NameSchema) {
        Err(Error::Json { line, column, reason }) => (line, column, reason),
        other => panic!("{:?}: expected a JSON error, got {other:?}", String::from_utf8_lossy(input)),
    }
}

#[test]
fn malformed_documents() {
    let deep = {
        let mut s = String::new();
        for _ in 0..600 {
            s.push_str("{\"a\":");
        }
        s
    };
    // The 129th object is one too deep; the error is just after its `{`.
    let deep_col = 2 + 5 * MAX_DEPTH;
    let table: Vec<(&[u8], usize, usize, &str)> = vec![
        (b"", 1, 1, "expected `{` (an RFC 7951 document is a JSON object), found the end of the input"),
        (b"  [1]", 1, 3, "expected `{` (an RFC 7951 document is a JSON object), found `[`"),
        (b"{\"a\":1", 1, 7, "expected `,` or `}`, found the end of the input"),
        (b"{\"a\":1 \"b\":2}", 1, 8, "expected `,` or `}`, found `\"`"),
        (b"{\"a\" 1}", 1, 6, "expected `:` after the member name, found `1`"),
        (b"{\"a\"}", 1, 5, "expected `:` after the member name, found `}`"),
        (b"{\"a\":\"abc", 1, 6, "unterminated string"),
        (b"{\"a\":\"x\\qy\"}", 1, 8, "invalid escape `\\q`"),
        (b"{\"a\":\"x\\u12\"}", 1, 8, "invalid unicode escape (`\\u` needs four hex digits)"),
        (b"{\"a\":\"\\ud800x\"}", 1, 7, "unpaired surrogate `\\ud800` in string"),
        (b"{\"a\":\"x\ty\"}", 1, 8, "control character U+0009 in a string (write it as `\\u0009`)"),
        (b"{\"a\":\"\xff\"}", 1, 6, "invalid UTF-8 in string"),
        (b"{\"a\":1,\"a\":2}", 1, 8, "duplicate member `a`"),
        (b"{\"a\":[],\"a\":[]}", 1, 9, "duplicate member `a`"),
        (b"{\"m:c\":{\"m:x\":1,\"x\":2}}", 1, 17, "duplicate member `x`"),
        (b"{\"@\":{},\"@\":{}}", 1, 9, "duplicate member `@`"),
        (b"{\"a\":null}", 1, 6, "`null` is not a value in RFC 7951 (use [null] for empty)"),
        (b"{\"a\":[null,1]}", 1, 6, "expected `[null]` (the value of type empty)"),
        (b"{\"1abc\":1}", 1, 2, "invalid member name `1abc`"),
        (b"{\"\":1}", 1, 2, "invalid member name ``"),
        (b"{\"lsa1\":[{\"f\":1}]}", 1, 10, "list entry is missing key leaf `k1`"),
        (
            b"{\"lsb1\":[{\"k1\":1,\"k2\":\"a\"},{\"k2\":\"a\",\"k1\":1}]}",
            1,
            28,
            "duplicate list entry with keys [\"1\", \"a\"]",
        ),
        (b"{\"a\":[{\"x\":1},2]}", 1, 15, "mixed array of objects and scalars"),
        (b"{\"a\":[1,{\"x\":1}]}", 1, 9, "mixed array of objects and scalars"),
        (b"{\"lsa1\":[{\"k1\":1},\n  {\"k1\":1}]}", 2, 3, "duplicate list entry with keys [\"1\"]"),
        (b"{\"a\":[1 2]}", 1, 9, "expected `,` or `]`, found `2`"),
        (b"{\"a\":1} x", 1, 9, "trailing data after the document"),
        (b"{\"a\":1}{}", 1, 8, "trailing data after the document"),
        (b"{\"a\":01}", 1, 6, "invalid number `01`: leading zeros are not allowed"),
        (b"{\"a\":1.}", 1, 6, "invalid number `1.`: expected a digit after `.`"),
        (b"{\"a\":-}", 1, 6, "invalid number `-`: expected a digit after `-`"),
        (b"{\"a\":1e}", 1, 6, "invalid number `1e`: expected a digit in the exponent"),
        (b"{\"a\":1.5.5}", 1, 6, "invalid number `1.5.5`: unexpected character after the number"),
        (b"{\"a\":NaN}", 1, 6, "expected a value, found `NaN`"),
        (b"{\"a\":truex}", 1, 6, "expected a value, found `truex`"),
        (b"{\"a\":\xc3\xa9}", 1, 6, "expected a value, found byte 0xC3 (only strings may hold non-ASCII characters)"),
        (b"{\"a\":1,}", 1, 8, "trailing comma before `}`"),
        (b"{\n  \"a\": 1,\n  \"b\": tru\n}", 3, 8, "expected a value, found `tru`"),
        (b"{\"a\":\"\xc3\xa9\\q\"}", 1, 8, "invalid escape `\\q`"),
        (b"{\"a\":\"\xc3\xa9\",\n\"b\":\"\xc3\xa9\", x}", 2, 10, "expected a member name (a string), found `x`"),
        (b"{\"@a\":{\"m:x\":\"1\"}}", 1, 2, "annotation `@a` for a member that does not exist"),
        (b"{\"a\":1,\"@a\":{\"m:x\":{}}}", 1, 20, "annotation value must be a string, number or boolean"),
        (
            b"{\"a\":1,\"@a\":5}",
            1,
            13,
            "annotation `@a` must be an object (or, for a leaf-list, an array of objects and nulls)",
        ),
        (b"{\"x\":[1,2],\"@x\":[{},{},{}]}", 1, 12, "annotation `@x` has 3 entries, the leaf-list has 2"),
        (
            b"{\"c\":{},\"@c\":{}}",
            1,
            9,
            "annotation `@c` names a container or list: their annotations go in their own `@` member",
        ),
        (b"{\"c1\":5}", 1, 7, "`c1` is a container (an object) in the schema, found a scalar"),
        (b"{\"lsa1\":{}}", 1, 9, "`lsa1` is a list (an array of objects) in the schema, found an object"),
        (deep.as_bytes(), 1, deep_col, "nesting too deep (more than 128 levels)"),
    ];
    assert!(table.len() >= 25);
    for (input, line, column, reason) in table {
        // Whole, and one byte per read so every token crosses a refill.
        for chunk in [usize::MAX, 1] {
            let got = json_err(input, chunk);
            assert_eq!(got, (line, column, reason.to_string()), "input {:?}", String::from_utf8_lossy(input));
        }
    }
}

#[test]
fn very_deep_nesting_is_an_error_not_a_stack_overflow() {
    for open in ["[", "{\"a\":", "{\"any1\":["] {
        let doc = format!("{{\"x\":{}", open.repeat(100_000));
        let r = parse_str(&doc, &NameSchema);
        assert!(matches!(r, Err(Error::Json { .. })), "{r:?}");
    }
    let doc = format!("{{\"any1\":{}1{}}}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    let Err(Error::Json { reason, .. }) = parse_str(&doc, &NameSchema) else { panic!() };
    assert!(reason.starts_with("nesting too deep"), "{reason}");
    // Just under the limit parses (root object is level 1).
    let doc = format!("{{\"any1\":{}1{}}}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
    parse_str(&doc, &NameSchema).unwrap();
}

// ---- depth ----

#[test]
fn depth_option() {
    let doc = r#"{"c":{"@":{"m:a":"1"},"d":{"h":3},"g":2},"f":1,"ll":[1,2],"lsa1":[{"c3":{"x":1},"f2":"x","k1":1}]}"#;
    let root = parse_str(doc, &NameSchema).unwrap();
    let at = |depth| to_string(&root, &WriteOptions { pretty: false, depth: Some(depth) });
    assert_eq!(at(0), "{}");
    assert_eq!(at(1), r#"{"c":{"@":{"m:a":"1"}},"f":1,"ll":[1,2],"lsa1":[{"k1":1}]}"#);
    assert_eq!(at(2), r#"{"c":{"@":{"m:a":"1"},"d":{},"g":2},"f":1,"ll":[1,2],"lsa1":[{"c3":{},"f2":"x","k1":1}]}"#);
    assert_eq!(at(3), doc);
    assert_eq!(to_string(&root, &compact()), doc);
}

// ---- subtrees ----

fn subtree_schema() -> Schemaless {
    Schemaless { lists: [("/m:cont/lst".to_string(), ListInfo::keyed(["k1"]))].into() }
}

#[test]
fn subtree_of_a_container() {
    let at = Path::root().child("m:cont", Selector::None);
    let node = parse_subtree_str(r#"{"m:cont":{"a":1,"m:b":2}}"#, &subtree_schema(), &at).unwrap();
    let Node::Container(c) = node else { panic!() };
    assert_eq!(c.children.keys().collect::<Vec<_>>(), ["a", "b"]);
    // The member must be the node's, fully qualified at the top level.
    let err = parse_subtree_str(r#"{"cont":{}}"#, &subtree_schema(), &at).unwrap_err();
    assert_eq!(err, Error::Json { line: 1, column: 2, reason: "expected only member `m:cont`, found `cont`".into() });
    let err = parse_subtree_str(r#"{"m:cont":{},"m:x":1}"#, &subtree_schema(), &at).unwrap_err();
    assert!(matches!(err, Error::Json { column: 14, .. }), "{err:?}");
}

#[test]
fn subtree_of_a_list_entry_and_a_leaf() {
    let cont = Path::root().child("m:cont", Selector::None);
    let entry = cont.child("lst", Selector::Keys(vec![("k1".into(), "1".into())]));
    for doc in [r#"{"lst":[{"k1":1,"l":"x"}]}"#, r#"{"m:lst":[{"k1":1,"l":"x"}]}"#] {
        let Node::List(l) = parse_subtree_str(doc, &subtree_schema(), &entry).unwrap() else { panic!() };
        assert_eq!(l.info, ListInfo::keyed(["k1"]));
        assert_eq!(l.get(&["1".into()]).unwrap().key_text("l").as_deref(), Some("x"));
    }
    let err = parse_subtree_str(r#"{"lst":[{"k1":2}]}"#, &subtree_schema(), &entry).unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    let err = parse_subtree_str(r#"{"lst":[{"k1":1},{"k1":2}]}"#, &subtree_schema(), &entry).unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");

    let leaf = cont.child("l", Selector::None);
    let node = parse_subtree_str(r#"{"l":5,"@l":{"m:a":"b"}}"#, &subtree_schema(), &leaf).unwrap();
    assert_eq!(node, Node::Leaf { value: num("5"), meta: meta(&[("m:a", "b")]) });

    let err = parse_subtree_str(r#"{"@":{"m:a":"b"},"l":5}"#, &subtree_schema(), &leaf).unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    // An empty array that is not a list is an empty leaf-list here.
    assert_eq!(parse_subtree_str(r#"{"l":[]}"#, &subtree_schema(), &leaf).unwrap(), Node::LeafList(Vec::new()));

    let root = parse_subtree_str(r#"{"m:x":1}"#, &subtree_schema(), &Path::root()).unwrap();
    let Node::Container(c) = root else { panic!() };
    assert_eq!(child(&c, "m:x"), &Node::leaf(num("1")));
}

// ---- the streaming writer ----

#[test]
fn streaming_writer_events() {
    let mut w = JsonWriter::new(Vec::new(), false);
    w.begin_container("m:cont").unwrap();
    w.meta(&meta(&[("o:origin", "x")])).unwrap();
    w.begin_list("lst").unwrap();
    for i in 1..=2 {
        w.begin_entry().unwrap();
        w.leaf("k", &num(&i.to_string()), &Meta::new()).unwrap();
        w.end().unwrap();
    }
    w.end().unwrap();
    let entries = [
        LeafListEntry { value: Value::String("a".into()), meta: Meta::new() },
        LeafListEntry { value: Value::Empty, meta: meta(&[("m:a", "1")]) },
    ];
    w.leaf_list("ll", &entries).unwrap();
    w.anydata("any", &serde_json::json!({"z": [1, "x"]}), &Meta::new()).unwrap();
    w.begin_container("empty").unwrap();
    // `finish` closes what is still open.
    let out = String::from_utf8(w.finish().unwrap()).unwrap();
    assert_eq!(
        out,
        r#"{"m:cont":{"@":{"o:origin":"x"},"lst":[{"k":1},{"k":2}],"ll":["a",[null]],"@ll":[null,{"m:a":"1"}],"any":{"z":[1,"x"]},"empty":{}}}"#
    );
}

#[test]
fn streaming_writer_rejects_events_out_of_order() {
    let mut w = JsonWriter::new(Vec::new(), true);
    assert_eq!(w.end().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(w.begin_entry().unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    w.begin_list("l").unwrap();
    let e = w.leaf("x", &Value::Bool(true), &Meta::new()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn large_output_is_flushed_in_pieces() {
    /// Counts calls, to see that the writer does not hand over one byte at a time
    /// nor everything at the end.
    struct Counting(Vec<u8>, usize);
    impl std::io::Write for Counting {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.1 += 1;
            self.0.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let doc = perf_document(20_000);
    let root = parse_str(&doc, &perf_schema()).unwrap();
    let mut w = Counting(Vec::new(), 0);
    write_container(&mut w, &root, &compact()).unwrap();
    assert_eq!(String::from_utf8(w.0).unwrap(), doc);
    assert!(w.1 > 3 && w.1 < 100, "{} writes", w.1);
}

// ---- size ----

fn perf_schema() -> Schemaless {
    Schemaless { lists: [("/perf:cont/lst".to_string(), ListInfo::keyed(["k1", "k2"]))].into() }
}

/// The sysrepo seed's `perf` document with `n` list entries, as the writer writes it.
fn perf_document(n: usize) -> String {
    let mut s = String::from(r#"{"perf:cont":{"lst":["#);
    for i in 1..=n {
        if i > 1 {
            s.push(',');
        }
        s.push_str(&format!(r#"{{"k1":{i},"k2":"str{i}","l":"l{i}"}}"#));
    }
    s.push_str("]}}");
    s
}

#[test]
fn hundred_thousand_entries() {
    let doc = perf_document(100_000);
    let root = parse_str(&doc, &perf_schema()).unwrap();
    let Node::List(lst) = child(container(&root, "perf:cont"), "lst") else { panic!() };
    assert_eq!(lst.len(), 100_000);
    let e = lst.get(&["77777".into(), "str77777".into()]).unwrap();
    assert_eq!(e.key_text("l").as_deref(), Some("l77777"));
    assert_eq!(to_string(&root, &compact()), doc);
}

/// Release throughput: `cargo test -p canopy-core --release -- --ignored --nocapture throughput`.
/// Parse time excludes freeing the tree, which is reported on its own.
#[test]
#[ignore]
fn throughput() {
    let doc = perf_document(100_000);
    let schema = perf_schema();
    let mb = doc.len() as f64 / 1e6;
    let rounds = 10;
    let (mut parse, mut free) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    let mut root = Container::default();
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        let r = parse_str(&doc, &schema).unwrap();
        parse += t.elapsed();
        let t = std::time::Instant::now();
        drop(std::mem::replace(&mut root, r));
        free += t.elapsed();
    }
    let t = std::time::Instant::now();
    let mut len = 0;
    for _ in 0..rounds {
        let mut out = Vec::with_capacity(doc.len());
        write_container(&mut out, &root, &compact()).unwrap();
        len = out.len();
    }
    let write = t.elapsed();
    assert_eq!(len, doc.len());
    let t = std::time::Instant::now();
    for _ in 0..rounds {
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        std::hint::black_box(v);
    }
    let serde = t.elapsed();
    let t = std::time::Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(super::parse::skim(doc.as_bytes()).unwrap());
    }
    let skim = t.elapsed();
    let rate = |d: std::time::Duration| mb * rounds as f64 / d.as_secs_f64();
    println!(
        "document {mb:.2} MB, {rounds} rounds: parse to tree {:.0} MB/s (freeing the tree: {:.0} ms each), \
         write {:.0} MB/s; tokenizer alone {:.0} MB/s; serde_json::Value parse+free {:.0} MB/s",
        rate(parse),
        free.as_secs_f64() * 1e3 / rounds as f64,
        rate(write),
        rate(skim),
        rate(serde)
    );
}

// ---- property tests ----

fn text() -> impl Strategy<Value = String> {
    let special =
        prop::sample::select(vec!['"', '\\', '/', '\n', '\t', '\u{0}', '\u{1f}', '\u{7f}', 'é', '😀', '\u{2028}']);
    prop::collection::vec(prop_oneof![any::<char>(), special, Just('a')], 0..8).prop_map(|v| v.into_iter().collect())
}

fn number() -> impl Strategy<Value = String> {
    "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,4})?(e[+-]?[0-9]{1,3})?"
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|s| Value::String(s.into())),
        number().prop_map(|s| Value::Number(s.into())),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Empty),
    ]
}

fn meta_map() -> impl Strategy<Value = Meta> {
    let name = prop_oneof![3 => "[a-z]{1,3}:[a-z]{1,4}", 1 => text().prop_filter("non-empty", |s| !s.is_empty())];
    prop::collection::btree_map(name, text(), 0..3).prop_map(|m| m.into_iter().collect())
}

fn any_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value as J;
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        number().prop_map(|n| J::Number(n.parse().unwrap())),
        text().prop_map(J::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::Array),
            prop::collection::vec((text(), inner), 0..4).prop_map(|v| J::Object(v.into_iter().collect())),
        ]
    })
}

/// A generated node before it gets its name; names, and so the schema, follow
/// from the kind (see [`NameSchema`]).
#[derive(Clone, Debug)]
enum Shape {
    Leaf(Value, Meta),
    LeafList(Vec<LeafListEntry>),
    Any(serde_json::Value, Meta),
    Cont(Meta, Vec<(u8, Shape)>),
    /// `kind` 0..5: lx, lsa, lsb, lua, lub; key values are numbers or `prefix + i`.
    List {
        kind: u8,
        string_keys: bool,
        key_prefix: String,
        entries: Vec<(Meta, Vec<(u8, Shape)>)>,
    },
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        (value(), meta_map()).prop_map(|(v, m)| Shape::Leaf(v, m)),
        prop::collection::vec((value(), meta_map()).prop_map(|(value, meta)| LeafListEntry { value, meta }), 1..4)
            .prop_map(Shape::LeafList),
        (any_json(), meta_map()).prop_map(|(v, m)| Shape::Any(v, m)),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        let members = prop::collection::vec((0u8..3, inner), 0..5);
        prop_oneof![
            (meta_map(), members.clone()).prop_map(|(m, c)| Shape::Cont(m, c)),
            (0u8..5, any::<bool>(), text(), prop::collection::vec((meta_map(), members), 0..4)).prop_map(
                |(kind, string_keys, key_prefix, entries)| Shape::List { kind, string_keys, key_prefix, entries }
            ),
        ]
    })
}

/// Builds the children of a container from shapes; module choice 0 inherits
/// the parent's module, 1 and 2 pick `ma` / `mb`.
fn build(members: &[(u8, Shape)], parent_module: Option<&str>, out: &mut Container) {
    for (i, (m, shape)) in members.iter().enumerate() {
        let module = match m {
            1 => Some("ma"),
            2 => Some("mb"),
            _ => parent_module,
        };
        let base = match shape {
            Shape::Leaf(..) => "f",
            Shape::LeafList(_) => "ll",
            Shape::Any(..) => "any",
            Shape::Cont(..) => "c",
            Shape::List { kind, .. } => ["lx", "lsa", "lsb", "lua", "lub"][*kind as usize],
        };
        let name = match module {
            Some(m) if module != parent_module => format!("{m}:{base}{i}"),
            _ => format!("{base}{i}"),
        };
        let node = match shape {
            Shape::Leaf(v, meta) => Node::Leaf { value: v.clone(), meta: meta.clone() },
            Shape::LeafList(v) => Node::LeafList(v.clone()),
            Shape::Any(v, meta) => Node::AnyData { value: Box::new(v.clone()), meta: meta.clone() },
            Shape::Cont(meta, members) => {
                let mut c = Container { meta: meta.clone(), ..Container::default() };
                build(members, module, &mut c);
                Node::Container(c)
            }
            Shape::List { kind, string_keys, key_prefix, entries } => {
                let info = NameSchema.list_info(&format!("/{name}")).unwrap();
                let mut list = List::new(info);
                for (j, (meta, members)) in entries.iter().enumerate() {
                    let mut e = Container { meta: meta.clone(), ..Container::default() };
                    build(members, module, &mut e);
                    let key = |suffix: &str| {
                        if *string_keys {
                            Value::String(format!("{key_prefix}{suffix}{j}").into())
                        } else {
                            Value::Number(j.to_string().into())
                        }
                    };
                    if *kind > 0 {
                        e.children.insert("k1".into(), Node::leaf(key("")));
                    }
                    if *kind == 2 || *kind == 4 {
                        e.children.insert("k2".into(), Node::leaf(key("b")));
                    }
                    list.insert(e, &Insert::Last).unwrap();
                }
                Node::List(Box::new(list))
            }
        };
        out.children.insert(name.into(), node);
    }
}

fn tree() -> impl Strategy<Value = Container> {
    (meta_map(), prop::collection::vec((0u8..3, shape()), 0..6)).prop_map(|(meta, members)| {
        let mut root = Container { meta, ..Container::default() };
        build(&members, None, &mut root);
        root
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(root in tree()) {
        for pretty in [false, true] {
            let text = to_string(&root, &WriteOptions { pretty, depth: None });
            let back = parse_str(&text, &NameSchema);
            prop_assert_eq!(back.as_ref(), Ok(&root), "{}", text);
            // Writing is deterministic: the parsed tree writes the same text.
            prop_assert_eq!(to_string(&back.unwrap(), &WriteOptions { pretty, depth: None }), text);
        }
    }

    #[test]
    fn round_trip_through_small_reads(root in tree(), chunk in 1usize..7) {
        let text = to_string(&root, &compact());
        let back = parse_document(Chunked { data: text.as_bytes(), n: chunk }, &NameSchema);
        prop_assert_eq!(back, Ok(root));
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_document(&bytes[..], &NameSchema);
        let _ = parse_subtree(&bytes[..], &NameSchema, &Path::root().child("m:c1", Selector::None));
        let entry = Path::root().child("m:lsb1", Selector::Keys(vec![("k1".into(), "1".into()), ("k2".into(), "a".into())]));
        let _ = parse_subtree(&bytes[..], &NameSchema, &entry);
    }

    #[test]
    fn json_like_text_does_not_panic(s in r#"[{}\[\]",:0-9a-z@\\ \n.eE+-]{0,80}"#) {
        let _ = parse_str(&s, &NameSchema);
        let _ = parse_str(&format!("{{\"any1\":{s}}}"), &NameSchema);
    }

    #[test]
    fn mutated_documents_do_not_panic(
        root in tree(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..6),
    ) {
        let mut bytes = to_string(&root, &compact()).into_bytes();
        for (at, op, b) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 => bytes.insert(i, b),
                1 if i < bytes.len() => { bytes.remove(i); }
                _ if i < bytes.len() => bytes[i] = b,
                _ => {}
            }
        }
        let whole = parse_document(&bytes[..], &NameSchema);
        // Buffer refills inside tokens change nothing, errors and their positions included.
        prop_assert_eq!(&parse_document(Chunked { data: &bytes, n: 3 }, &NameSchema), &whole);
        if let Err(e) = whole {
            // Errors are JSON errors with a position.
            let ok = matches!(e, Error::Json { line, column, .. } if line >= 1 && column >= 1);
            prop_assert!(ok, "{:?}", e);
        }
    }
}

/// What building the same tree costs without any JSON (the floor under the
/// parser's throughput): `cargo test -p canopy-core --release -- --ignored --nocapture tree_building`.
#[test]
#[ignore]
fn tree_building_floor() {
    let doc_len = perf_document(100_000).len() as f64 / 1e6;
    for round in 0..3 {
        let t = std::time::Instant::now();
        let mut list = List::new(ListInfo::keyed(["k1", "k2"]));
        for i in 1..=100_000 {
            let mut e = Container::default();
            e.children.insert("k1".into(), Node::leaf(Value::Number(i.to_string().into())));
            e.children.insert("k2".into(), Node::leaf(Value::String(format!("str{i}").into())));
            e.children.insert("l".into(), Node::leaf(Value::String(format!("l{i}").into())));
            list.insert(e, &Insert::Last).unwrap();
        }
        let build = t.elapsed();
        assert_eq!(list.len(), 100_000);
        println!(
            "round {round}: building the 100,000-entry list directly takes {build:?} \
             (= {:.0} MB/s of its JSON text)",
            doc_len / build.as_secs_f64()
        );
    }
}

#[test]
fn top_level_members_are_split_without_parsing() {
    let text = "{\"a\": {\"x\": \"}],\\\"\"},\n \"b\" : [1, {\"y\": [2]}] ,\"c\":5,\"é\":\"ü\"}\n";
    let m = top_level_members(text).unwrap();
    let names: Vec<&str> = m.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "é"]);
    assert_eq!(&text[m[0].value.clone()], "{\"x\": \"}],\\\"\"}");
    assert_eq!(&text[m[1].value.clone()], "[1, {\"y\": [2]}]");
    assert_eq!(&text[m[2].value.clone()], "5");
    assert_eq!((m[1].line, m[1].column), (2, 8));
    assert!(top_level_members("{}").unwrap().is_empty());
    for (bad, line, column) in [
        ("[]", 1, 1),
        ("{\"a\": 1, \"a\": 2}", 1, 10),
        ("{\"a\": }", 1, 7),
        ("{\"a\": {\"b\": 1}", 1, 15),
        ("{\"a\": {\"b\": [1}", 1, 7),
        ("{\"a\": 1} x", 1, 10),
        ("", 1, 1),
    ] {
        match top_level_members(bad) {
            Err(Error::Json { line: l, column: c, .. }) => assert_eq!((l, c), (line, column), "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn errors_in_a_member_are_placed_in_the_whole_input() {
    let text = "{\"a\": 1,\n  \"b\": {\"x\": 1,\n \"y\": nul}}";
    let m = top_level_members(text).unwrap();
    let e = parse_str(&text[m[1].value.clone()], &Schemaless::default()).unwrap_err();
    match offset_error(e, &m[1]) {
        Error::Json { line, column, .. } => assert_eq!((line, column), (3, 7)),
        other => panic!("{other:?}"),
    }
    let e = parse_str(&text[m[1].value.clone()], &Schemaless::default()).unwrap_err();
    let Error::Json { line, column, .. } = e else { panic!() };
    assert_eq!((line, column), (2, 7));
    let e = parse_str("{\"x\" 1}", &Schemaless::default()).unwrap_err();
    let Error::Json { line, column, .. } = offset_error(e, &m[1]) else { panic!() };
    assert_eq!((line, column), (2, 13));
}

#[test]
fn many_annotations_in_one_object_are_checked_for_duplicates() {
    // Beyond a few annotations per object the duplicate check uses a set:
    // both sides of that switch find a repeated one, and all are applied.
    for n in [3usize, 16, 17, 40] {
        let mut doc = String::from("{\"m:c\":{");
        for i in 0..n {
            doc.push_str(&format!("\"k{i}\":{i},\"@k{i}\":{{\"m:a\":\"{i}\"}},"));
        }
        doc.pop();
        doc.push_str("}}");
        let tree = parse_str(&doc, &Schemaless::default()).unwrap();
        let c = container(&tree, "m:c");
        for i in 0..n {
            match child(c, &format!("k{i}")) {
                Node::Leaf { meta: m, .. } => assert_eq!(*m, meta(&[("m:a", &i.to_string())])),
                other => panic!("{other:?}"),
            }
        }
        for dup in [0, n - 1] {
            let bad = format!("{},\"@k{dup}\":{{\"m:a\":\"x\"}}}}}}", &doc[..doc.len() - 2]);
            let e = parse_str(&bad, &Schemaless::default()).unwrap_err().to_string();
            assert!(e.contains(&format!("duplicate member `@k{dup}`")), "{n} {dup}: {e}");
        }
    }
}

/// The eight-bytes-at-a-time check finds every character that needs an
/// escape (and the colon, when asked), at every position, and nothing else
/// (UTF-8 above ASCII included).
#[test]
fn needs_escape_finds_exactly_what_needs_escaping() {
    let naive = |s: &str| s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
    let naive_colon = |s: &str| naive(s) || s.contains(':');
    let fillers = ["a", "é", "~", "\u{7f}", "€", " "];
    for len in 0..20 {
        for filler in fillers {
            let base: String = filler.repeat(len);
            assert!(!super::needs_escape(&base), "{base:?}");
            assert!(!super::needs_escape_or_colon(&base), "{base:?}");
            for at in 0..=base.len() {
                if !base.is_char_boundary(at) {
                    continue;
                }
                for c in (0u8..0x80).map(char::from).chain(['é', '\u{2028}', '😀']) {
                    let mut s = base.clone();
                    s.insert(at, c);
                    assert_eq!(super::needs_escape(&s), naive(&s), "{s:?}");
                    assert_eq!(super::needs_escape_or_colon(&s), naive_colon(&s), "{s:?}");
                }
            }
        }
    }
}
