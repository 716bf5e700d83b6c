//! CPS's notification subscriptions (`/v2/notification-subscription`): which
//! dataspaces, anchors and xpaths a client wants data-updated events for,
//! kept as CPS keeps them, as data of the anchor `cps-notification-subscriptions`
//! in the dataspace `CPS-Admin`, under the module of the same name (its
//! structure is CPS's interface: clients post and read documents of it).
//!
//! - POST adds the body's list entries below `xpath` (as POST `list-nodes`
//!   does): 201, or 409 for an entry that is there already;
//! - GET answers the node at `xpath` with all its descendants (as GET
//!   `node` v2 does): 200, or 404;
//! - DELETE deletes the node at `xpath`: 204, or 400 "DataNode not found"
//!   (as CPS answers a delete of a missing node).
//!
//! Without `xpath`, `/dataspaces` (CPS's default). The admin dataspace, its
//! schema set, its anchor and the `dataspaces` container are made by the
//! first call of the three, and again by any call that finds one missing
//! (the container deleted by a client); they are ordinary CPS data, readable
//! and writable through the data endpoints too. CPS makes them when it
//! starts; canopy does not write to a store before a client asks (a commit
//! at start would move the revision RESTCONF clients and streams count
//! from), so until then `CPS-Admin` is not listed and a client may take the
//! name.
//! CPS publishes its data-updated events to Kafka; canopy has no Kafka
//! client, and announces changes on its own change streams instead.

use std::sync::Arc;

use super::registry::{header, Anchor, ModuleRef, Registry};
use super::{data, Call, CpsError, Reply};

/// The dataspace, schema set and anchor CPS keeps the subscriptions in.
pub const ADMIN_DATASPACE: &str = "CPS-Admin";
pub const SUBSCRIPTIONS: &str = "cps-notification-subscriptions";

/// The module: its name, namespace and tree are CPS's, for clients of it.
const MODULE: &str = r#"module cps-notification-subscriptions {
  yang-version 1.1;
  namespace "org:onap:cps";
  prefix cps-notification-subscriptions;

  revision "2024-08-05" {
    description "The notification subscriptions of a CPS service.";
  }

  container dataspaces {
    list dataspace {
      key "name";
      leaf name { type string; }
      container anchors {
        list anchor {
          key "name";
          leaf name { type string; }
          container xpaths {
            list xpath {
              key "path";
              leaf path { type string; }
            }
          }
        }
      }
      leaf-list subscriptionIds { type string; }
      leaf topic { type string; }
    }
  }
}
"#;

/// Answers a call of `/v2/notification-subscription`.
///
/// # Errors
/// As the data endpoints: 400 without `xpath` or with a bad one or a bad
/// body, 404 for a node that is not there, 409 for an entry that is.
pub fn handle(reg: &Registry, call: &Call) -> Result<Reply, CpsError> {
    let anchor = ensure(reg)?;
    // The endpoint's one parameter (others are not CPS's here), and for a
    // read the whole subtree.
    let xpath = call.param("xpath").unwrap_or("/dataspaces").to_string();
    let mut query = vec![("xpath".to_string(), xpath)];
    if call.method == "GET" {
        query.push(("descendants".into(), "all".into()));
    }
    let call = Call {
        method: call.method.clone(),
        segments: call.segments.clone(),
        query,
        headers: call.headers.clone(),
        body: call.body.clone(),
    };
    match call.method.as_str() {
        "POST" => data::nodes(&anchor, &call, true),
        "DELETE" => data::nodes(&anchor, &call, false),
        "GET" => data::get_node_buffered(&anchor, &call, 2),
        m => Err(CpsError {
            status: axum::http::StatusCode::METHOD_NOT_ALLOWED,
            message: "Method not allowed".into(),
            details: format!("{m} is not supported here"),
        }),
    }
}

/// The subscriptions' anchor, made (with its dataspace, schema set and top
/// container) where any of them is not there. Calls at once all find what
/// another made (creating what exists is taken as done; the container is
/// merged).
///
/// # Errors
/// The store cannot be read or written.
fn ensure(reg: &Registry) -> Result<Arc<Anchor>, CpsError> {
    let anchor = match reg.anchor(ADMIN_DATASPACE, SUBSCRIPTIONS) {
        Ok(a) => a,
        Err(_) => {
            let made = |r: Result<(), CpsError>| match r {
                Err(e) if e.status != axum::http::StatusCode::CONFLICT => Err(e),
                _ => Ok(()),
            };
            made(reg.create_dataspace(ADMIN_DATASPACE))?;
            if reg.schema_set(ADMIN_DATASPACE, SUBSCRIPTIONS).is_err() {
                let (namespace, prefix) = header(MODULE);
                let module = ModuleRef {
                    name: SUBSCRIPTIONS.into(),
                    revision: Some("2024-08-05".into()),
                    namespace,
                    prefix,
                    text: MODULE.into(),
                };
                let set = vec![module];
                made(reg.create_schema_set(ADMIN_DATASPACE, SUBSCRIPTIONS, set, canopy::Validation::Structure))?;
            }
            made(reg.create_anchor(ADMIN_DATASPACE, SUBSCRIPTIONS, SUBSCRIPTIONS))?;
            reg.anchor(ADMIN_DATASPACE, SUBSCRIPTIONS)?
        }
    };
    let top = format!("/{SUBSCRIPTIONS}:dataspaces");
    let s = anchor.store.running();
    if s.get_item(&top).map_err(|e| CpsError::internal(e.to_string()))?.is_none() {
        let edit = canopy::Edit::merge(
            top.parse().map_err(|e: canopy_core::Error| CpsError::internal(e.to_string()))?,
            canopy::Node::Container(canopy::Container::default()),
        );
        s.apply(&[edit]).map_err(|e| CpsError::internal(e.to_string()))?;
    }
    Ok(anchor)
}
