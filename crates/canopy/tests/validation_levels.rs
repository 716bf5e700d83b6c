//! The store's validation level: `full` checks every constraint of the YANG
//! schema, `structure` only names, structure and types (as ONAP CPS checks
//! its anchors). The level is kept in the store: another open finds it.
//! The test modules are in `tests/yang/`.

use std::path::PathBuf;

use canopy::{Error, Operation, ReadOptions, Store, Validation, Value};

fn module(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/yang").join(name)
}

fn url(dir: &tempfile::TempDir, cache: bool) -> String {
    format!("lmdb:{}?sync=off&cache={}", dir.path().display(), if cache { "on" } else { "off" })
}

fn violations(r: canopy::Result<canopy::Commit>) -> Vec<String> {
    match r {
        Err(Error::Invalid(v)) => v.iter().map(ToString::to_string).collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

fn json(s: &Store, path: &str) -> serde_json::Value {
    let mut out = Vec::new();
    s.running().get_json(path, ReadOptions::default(), false, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

/// Breaks unique, max-elements, a leafref, a mandatory leaf, a mandatory
/// choice, a when and a must: the document `constraints` in `yang.rs` rejects.
const BREAKS_CONSTRAINTS: &str = r#"{"types:things":{"thing":[{"name":"a","id":1},{"name":"c","id":1}]},
    "types:limits":{"few":[{"k":1},{"k":2},{"k":3},{"k":4}]},
    "types:c":{"ref":"zzz"},
    "types:people":{"person":[{"name":"q","kind":"adult","school":"x","salary":2000000}]}}"#;

fn levels(cache: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&url(&dir, cache)).unwrap();
    s.schema_add(&[module("types.yang")], &[]).unwrap();
    assert_eq!(s.validation().unwrap(), Validation::Full, "full unless set");
    let r = s.running();
    let e = violations(r.import(BREAKS_CONSTRAINTS.as_bytes(), Operation::Merge));
    assert_eq!(e.len(), 7, "{e:#?}");

    // Structure only: the same document is stored...
    s.set_validation(Validation::Structure).unwrap();
    assert_eq!(s.validation().unwrap(), Validation::Structure);
    r.import(BREAKS_CONSTRAINTS.as_bytes(), Operation::Merge).unwrap();
    assert_eq!(json(&s, "/types:c/ref")["types:c"]["ref"], "zzz");
    assert_eq!(json(&s, "/types:limits/few")["types:limits"]["few"].as_array().unwrap().len(), 4);
    // ...and deleting a leafref's target or the last entry under
    // min-elements is not refused either.
    r.apply(&[
        canopy::Edit::delete("/types:things/thing[name='a']".parse().unwrap()),
        canopy::Edit::delete("/types:people/person[name='q']".parse().unwrap()),
    ])
    .unwrap();
    // Names, structure and types are still checked, every problem listed and
    // nothing stored.
    let rev = s.revision().unwrap();
    let e =
        violations(r.import(r#"{"types:c":{"u16":"many","bogus":1,"tags":"notalist"}}"#.as_bytes(), Operation::Merge));
    assert!(e.iter().any(|v| v.starts_with("/types:c/u16: invalid value")), "{e:#?}");
    assert!(e.iter().any(|v| v.starts_with("/types:c/bogus: no schema node `bogus`")), "{e:#?}");
    assert!(e.iter().any(|v| v.contains("/types:c/tags") && v.contains("is a leaf-list in the schema")), "{e:#?}");
    assert_eq!(e.len(), 3, "{e:#?}");
    let e = r.import(r#"{"types:things":{"thing":[{"id":5}]}}"#.as_bytes(), Operation::Merge).unwrap_err();
    assert!(e.to_string().contains("missing key leaf `name`"), "{e}");
    assert_eq!(s.revision().unwrap(), rev, "nothing stored");
    let e = violations(r.set("/types:people/person[name='p']/age", Value::Number("300".into())));
    assert!(e.iter().any(|v| v.starts_with("/types:people/person[name='p']/age: invalid value")), "{e:#?}");

    // Another open of the store finds the level.
    drop(s);
    let s = Store::open(&url(&dir, cache)).unwrap();
    assert_eq!(s.validation().unwrap(), Validation::Structure);
    s.running().set("/types:c/ref", Value::String("nothing".into())).unwrap();

    // Back to full: the next commit is held to every constraint again.
    s.set_validation(Validation::Full).unwrap();
    let e = violations(s.running().set("/types:c/ref", Value::String("still-nothing".into())));
    assert_eq!(e, ["/types:c/ref: leafref: no /types:things/thing/name with value 'still-nothing'"]);
    assert_eq!(Store::open(&url(&dir, cache)).unwrap().validation().unwrap(), Validation::Full);
}

#[test]
fn structure_checks_types_not_constraints_uncached() {
    levels(false);
}

#[test]
fn structure_checks_types_not_constraints_cached() {
    levels(true);
}

#[test]
fn level_names_parse_and_print() {
    for l in [Validation::Full, Validation::Structure] {
        assert_eq!(l.to_string().parse::<Validation>().unwrap(), l);
    }
    let e = "strict".parse::<Validation>().unwrap_err().to_string();
    assert!(e.contains("`strict`") && e.contains("full") && e.contains("structure"), "{e}");
}

#[test]
fn a_damaged_level_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&url(&dir, false)).unwrap();
    s.schema_add(&[module("types.yang")], &[]).unwrap();
    let mut b = canopy_store::Batch { expect_revision: None, ops: Vec::new() };
    b.put(canopy_store::keys::VALIDATION.to_vec(), b"lenient".to_vec());
    s.backend().apply(&b).unwrap();
    let e = s.validation().unwrap_err().to_string();
    assert!(e.contains("validation level"), "{e}");
}
