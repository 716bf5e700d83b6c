//! Published IETF modules (ietf-interfaces, ietf-ip, ietf-routing, with their
//! imports) loaded into a store, with valid and invalid instance data.
//!
//! The modules are not in the repository: `scripts/setup.sh` fetches them
//! (from the pyang package) and `scripts/test.sh` sets `CANOPY_YANG_MODULES`
//! to their directory. Without it the tests say they are skipped, except in CI
//! (`CI` set), where they fail.

use std::path::PathBuf;

use canopy::{Error, Operation, ReadOptions, Store, Value, WithDefaults};

fn modules() -> Option<PathBuf> {
    match std::env::var_os("CANOPY_YANG_MODULES") {
        Some(d) => Some(PathBuf::from(d)),
        None if std::env::var_os("CI").is_some() => {
            panic!("CANOPY_YANG_MODULES is not set: run scripts/setup.sh, then scripts/test.sh")
        }
        None => {
            eprintln!("skipped: CANOPY_YANG_MODULES is not set (scripts/setup.sh fetches the IETF modules, scripts/test.sh sets it)");
            None
        }
    }
}

fn ietf_store(dir: &tempfile::TempDir, cache: bool) -> Option<Store> {
    let m = modules()?;
    let s = Store::open(&format!("lmdb:{}?sync=off&cache={}", dir.path().display(), if cache { "on" } else { "off" }))
        .unwrap();
    let files: Vec<PathBuf> =
        ["ietf-interfaces", "ietf-ip", "ietf-routing", "iana-if-type"].iter().map(|n| find(&m, n)).collect();
    let added = s.schema_add(&files, &[m]).unwrap();
    let names: Vec<&str> = added.iter().map(|m| m.name.as_str()).collect();
    for n in ["ietf-interfaces", "ietf-ip", "ietf-routing", "iana-if-type", "ietf-yang-types", "ietf-inet-types"] {
        assert!(names.contains(&n) || n.ends_with("-types"), "{n} not in {names:?}");
    }
    Some(s)
}

fn find(dir: &std::path::Path, name: &str) -> PathBuf {
    for sub in ["ietf", "iana", ""] {
        let p = dir.join(sub).join(format!("{name}.yang"));
        if p.exists() {
            return p;
        }
    }
    panic!("{name}.yang not under {}", dir.display())
}

const VALID: &str = r#"{
  "ietf-interfaces:interfaces": {
    "interface": [
      {
        "name": "eth0",
        "type": "iana-if-type:ethernetCsmacd",
        "enabled": true,
        "ietf-ip:ipv4": { "mtu": 1500, "address": [{ "ip": "192.0.2.1", "prefix-length": 24 }] },
        "ietf-ip:ipv6": { "address": [{ "ip": "2001:db8::1", "prefix-length": 64 }] }
      },
      { "name": "lo", "type": "iana-if-type:softwareLoopback" }
    ]
  },
  "ietf-routing:routing": {
    "router-id": "192.0.2.1",
    "control-plane-protocols": {
      "control-plane-protocol": [{ "type": "ietf-routing:static", "name": "st", "static-routes": {} }]
    },
    "ribs": { "rib": [{ "name": "main", "address-family": "ietf-routing:ipv4" }] }
  }
}"#;

fn rejected(r: canopy::Result<canopy::Commit>) -> Vec<String> {
    match r {
        Err(Error::Invalid(v)) => v.iter().map(ToString::to_string).collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

fn ietf(cache: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some(s) = ietf_store(&dir, cache) else { return };
    let r = s.running();
    r.import(VALID.as_bytes(), Operation::Merge).unwrap();
    let mut out = Vec::new();
    r.get_json("/ietf-interfaces:interfaces/interface[name='eth0']", ReadOptions::default(), false, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let eth0 = &v["ietf-interfaces:interfaces"]["interface"][0];
    assert_eq!(eth0["ietf-ip:ipv4"]["address"][0]["prefix-length"], 24);
    assert_eq!(eth0["type"], "iana-if-type:ethernetCsmacd");
    // Defaults of the modules: `enabled` is true unless set.
    let mut out = Vec::new();
    let all = ReadOptions { with_defaults: WithDefaults::ReportAll, ..Default::default() };
    r.get_json("/ietf-interfaces:interfaces/interface[name='lo']", all, false, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["ietf-interfaces:interfaces"]["interface"][0]["enabled"], true);

    let before = s.revision().unwrap();
    let bad = r#"{
      "ietf-interfaces:interfaces": {
        "interface": [
          { "name": "eth1", "ietf-ip:ipv4": { "address": [{ "ip": "192.0.2.9" }] } },
          { "name": "eth2", "type": "iana-if-type:ethernetCsmacd",
            "ietf-ip:ipv4": { "mtu": 20, "address": [{ "ip": "192.0.2.300", "prefix-length": 33 }] } },
          { "name": "eth3", "type": "iana-if-type:noSuchType" }
        ]
      },
      "ietf-routing:routing": {
        "router-id": "not-an-address",
        "control-plane-protocols": {
          "control-plane-protocol": [{ "type": "ietf-routing:direct", "name": "d", "static-routes": {} }]
        }
      }
    }"#;
    let e = rejected(r.import(bad.as_bytes(), Operation::Merge));
    let has = |path: &str, reason: &str| {
        assert!(
            e.iter().any(|v| v.starts_with(&format!("{path}: ")) && v.contains(reason)),
            "no `{path}: …{reason}…` in {e:#?}"
        )
    };
    // Values are checked while edits are read: every bad value is listed.
    has("/ietf-interfaces:interfaces/interface[name='eth2']/ietf-ip:ipv4/mtu", "range");
    has("/ietf-interfaces:interfaces/interface[name='eth2']/ietf-ip:ipv4/address[ip='192.0.2.300']/ip", "pattern");
    has(
        "/ietf-interfaces:interfaces/interface[name='eth2']/ietf-ip:ipv4/address[ip='192.0.2.300']/prefix-length",
        "range",
    );
    has("/ietf-interfaces:interfaces/interface[name='eth3']/type", "identity not found");
    has("/ietf-routing:routing/router-id", "not-an-address");
    assert_eq!(e.len(), 5, "{e:#?}");
    assert_eq!(s.revision().unwrap(), before);

    // Values right, constraints broken: mandatory leaf and choice, when.
    let bad = r#"{
      "ietf-interfaces:interfaces": {
        "interface": [{ "name": "eth1", "ietf-ip:ipv4": { "address": [{ "ip": "192.0.2.9" }] } }]
      },
      "ietf-routing:routing": {
        "control-plane-protocols": {
          "control-plane-protocol": [{ "type": "ietf-routing:direct", "name": "d", "static-routes": {} }]
        }
      }
    }"#;
    let e = rejected(r.import(bad.as_bytes(), Operation::Merge));
    let has = |v: &str| assert!(e.iter().any(|x| x.starts_with(v)), "no `{v}` in {e:#?}");
    has("/ietf-interfaces:interfaces/interface[name='eth1']/type: mandatory node is missing");
    has("/ietf-interfaces:interfaces/interface[name='eth1']/ietf-ip:ipv4/address[ip='192.0.2.9']: mandatory choice `subnet`");
    has("/ietf-routing:routing/control-plane-protocols/control-plane-protocol[type='ietf-routing:direct'][name='d']/static-routes: when condition");
    assert_eq!(e.len(), 3, "{e:#?}");
    assert_eq!(s.revision().unwrap(), before);

    // Deleting the mandatory type of an existing interface.
    let e = rejected(r.delete("/ietf-interfaces:interfaces/interface[name='eth0']/type"));
    assert_eq!(e, ["/ietf-interfaces:interfaces/interface[name='eth0']/type: mandatory node is missing"]);
    // A valid change goes through.
    r.set("/ietf-interfaces:interfaces/interface[name='eth0']/ietf-ip:ipv4/mtu", Value::Number("9000".into())).unwrap();
    r.set("/ietf-interfaces:interfaces/interface[name='eth0']/description", Value::String("uplink".into())).unwrap();
}

#[test]
fn ietf_modules_uncached() {
    ietf(false);
}

#[test]
fn ietf_modules_cached() {
    ietf(true);
}

/// ietf-vrrp (RFC 8347): a tracked interface must have IPv4 (`must
/// "/if:interfaces/if:interface[if:name=current()]/ip:ipv4"` on a leaf deep
/// under another interface's entry), and it is an `if:interface-ref`
/// leafref. Changing the tracked interface, not the tracking one, is what
/// breaks them.
fn vrrp(cache: bool) {
    let Some(m) = modules() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&format!("lmdb:{}?sync=off&cache={}", dir.path().display(), if cache { "on" } else { "off" }))
        .unwrap();
    let files: Vec<PathBuf> =
        ["ietf-interfaces", "ietf-ip", "ietf-vrrp", "iana-if-type"].iter().map(|n| find(&m, n)).collect();
    s.schema_add(&files, &[m]).unwrap();
    let r = s.running();
    let doc = r#"{
      "ietf-interfaces:interfaces": {
        "interface": [
          { "name": "eth0", "type": "iana-if-type:ethernetCsmacd",
            "ietf-ip:ipv4": {
              "address": [{ "ip": "192.0.2.1", "prefix-length": 24 }],
              "ietf-vrrp:vrrp": { "vrrp-instance": [{
                "vrid": 7, "version": "ietf-vrrp:vrrp-v3",
                "track": { "interfaces": { "interface": [{ "interface": "eth1" }] } } }] } } },
          { "name": "eth1", "type": "iana-if-type:ethernetCsmacd", "ietf-ip:ipv4": { "mtu": 1500 } },
          { "name": "eth2", "type": "iana-if-type:ethernetCsmacd", "ietf-ip:ipv6": {} }
        ]
      }
    }"#;
    r.import(doc.as_bytes(), Operation::Merge).unwrap();
    let tracked = "/ietf-interfaces:interfaces/interface[name='eth0']/ietf-ip:ipv4/ietf-vrrp:vrrp/vrrp-instance[vrid='7']/track/interfaces/interface[interface='eth1']/interface";
    let before = s.revision().unwrap();
    // Removing IPv4 from the tracked interface breaks the must.
    let e = rejected(r.delete("/ietf-interfaces:interfaces/interface[name='eth1']/ietf-ip:ipv4"));
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with(&format!("{tracked}: must condition `")), "{e:#?}");
    // Removing the interface breaks the leafref too.
    let e = rejected(r.delete("/ietf-interfaces:interfaces/interface[name='eth1']"));
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(
        e.iter().any(|v| v.starts_with(&format!(
            "{tracked}: leafref: no /ietf-interfaces:interfaces/interface/name with value 'eth1'"
        ))),
        "{e:#?}"
    );
    // Tracking an interface without IPv4 is refused as it is set.
    let e = rejected(r.set(
        "/ietf-interfaces:interfaces/interface[name='eth0']/ietf-ip:ipv4/ietf-vrrp:vrrp/vrrp-instance[vrid='7']/track/interfaces/interface[interface='eth2']/priority-decrement",
        Value::Number("5".into()),
    ));
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].contains("interface[interface='eth2']/interface: must condition"), "{e:#?}");
    assert_eq!(s.revision().unwrap(), before);
    // Changes elsewhere in the tracked interface are fine.
    r.set("/ietf-interfaces:interfaces/interface[name='eth1']/ietf-ip:ipv4/mtu", Value::Number("9000".into())).unwrap();
    r.delete("/ietf-interfaces:interfaces/interface[name='eth2']").unwrap();
}

#[test]
fn vrrp_tracking_uncached() {
    vrrp(false);
}

#[test]
fn vrrp_tracking_cached() {
    vrrp(true);
}
