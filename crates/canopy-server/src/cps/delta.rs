//! CPS deltas: the changes from a source anchor to a target anchor (or a
//! posted document), and applying such a report.
//!
//! A report is a list of entries `{action, xpath, sourceData, targetData}`,
//! with CPS's data maps (`{name: {leaves}}`, `{name: [{leaves}]}` for a list
//! entry; names without prefixes). Without grouping there is one entry per
//! data node: `remove` and `create` carry the node's own leaves (its
//! descendants have entries of their own), `replace` the leaves that differ
//! on each side with a list entry's keys; removals and replacements come in
//! the source's document order, then creations in the target's. With
//! `grouping-enabled=true`, the nodes removed among one node's children
//! form one `remove` entry at the parent's xpath carrying them with their
//! descendants, likewise the created ones, and the nodes on both sides are
//! compared leaf by leaf and their children grouped the same way.

use std::collections::{BTreeMap, HashMap};

use axum::http::StatusCode;
use canopy::{Container, Edit, Operation, Path, ReadOptions};
use canopy_core::path::Selector;
use canopy_yang::model::Model;
use serde_json::{json, Map, Value as Json};

use super::data::{self, chain_map, edits_of, instance, locate, read, scratch, writes, yang_model};
use super::path::{self as cpath, children, local, xpath_of, Chain};
use super::registry::Anchor;
use super::{files, Call, CpsError, Reply};

/// Levels of child nodes compared below the nodes at the xpath (`None`: all).
type Depth = Option<usize>;

fn deeper(d: Depth) -> Option<Depth> {
    match d {
        Some(0) => None,
        Some(n) => Some(Some(n - 1)),
        None => Some(None),
    }
}

fn leaves(model: &Model, c: &Chain<'_>) -> BTreeMap<String, Json> {
    chain_map(model, c, Some(0)).into_iter().collect()
}

fn is_entry(c: &Chain<'_>) -> bool {
    c.last().is_some_and(|l| !l.keys.is_empty())
}

fn name_of(c: &Chain<'_>) -> String {
    c.last().map_or_else(String::new, |l| local(l.name).to_string())
}

/// One node's data map: `{name: data}`, or `{name: [data]}` for a list entry.
fn wrapped(c: &Chain<'_>, data: Map<String, Json>) -> Json {
    let v = Json::Object(data);
    let mut m = Map::new();
    m.insert(name_of(c), if is_entry(c) { Json::Array(vec![v]) } else { v });
    Json::Object(m)
}

/// Several nodes' data maps in one, the entries of a list in one array.
fn merged(model: &Model, nodes: &[&Chain<'_>], depth: Depth) -> Json {
    let mut m = Map::new();
    for c in nodes {
        let d = Json::Object(chain_map(model, c, depth));
        if is_entry(c) {
            if let Json::Array(a) = m.entry(name_of(c)).or_insert_with(|| Json::Array(Vec::new())) {
                a.push(d);
            }
        } else {
            m.insert(name_of(c), d);
        }
    }
    Json::Object(m)
}

fn children_of<'a>(c: &Chain<'a>) -> Vec<Chain<'a>> {
    children(c.last().expect("a node").node)
        .into_iter()
        .map(|l| {
            let mut n = c.clone();
            n.push(l);
            n
        })
        .collect()
}

/// The xpath a group of siblings is reported at: their parent's, or the
/// first one's own at the top.
fn group_xpath(c: &Chain<'_>) -> String {
    if c.len() > 1 {
        xpath_of(&c[..c.len() - 1])
    } else {
        xpath_of(c)
    }
}

/// The `replace` entry of a node on both sides, when its leaves differ.
fn replaced(model: &Model, s: &Chain<'_>, t: &Chain<'_>) -> Option<Json> {
    let (a, b) = (leaves(model, s), leaves(model, t));
    let mut sd = Map::new();
    let mut td = Map::new();
    for (k, v) in &a {
        if b.get(k) != Some(v) {
            sd.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in &b {
        if a.get(k) != Some(v) {
            td.insert(k.clone(), v.clone());
        }
    }
    if sd.is_empty() && td.is_empty() {
        return None;
    }
    // A list entry's side names its entry by its keys, as written in its
    // xpath (CPS takes them from the xpath's conditions: text).
    // The keys come first, as in the entry's own data.
    let keyed = |side: Map<String, Json>| -> Map<String, Json> {
        if side.is_empty() {
            return side;
        }
        let mut m: Map<String, Json> = s
            .last()
            .map(|l| l.keys.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|(k, v)| (local(k).to_string(), Json::String(v.to_string())))
            .collect();
        m.extend(side);
        m
    };
    let (sd, td) = (keyed(sd), keyed(td));
    let mut e = Map::new();
    e.insert("action".into(), json!("replace"));
    e.insert("xpath".into(), json!(xpath_of(s)));
    if !sd.is_empty() {
        e.insert("sourceData".into(), wrapped(s, sd));
    }
    if !td.is_empty() {
        e.insert("targetData".into(), wrapped(t, td));
    }
    Some(Json::Object(e))
}

fn flatten<'a>(nodes: Vec<Chain<'a>>, depth: Depth, out: &mut Vec<(String, Chain<'a>)>) {
    for c in nodes {
        let kids = deeper(depth).map(|d| (children_of(&c), d));
        out.push((xpath_of(&c), c));
        if let Some((kids, d)) = kids {
            flatten(kids, d, out);
        }
    }
}

/// The report without grouping: one entry per data node.
fn per_node(model: &Model, src: Vec<Chain<'_>>, tgt: Vec<Chain<'_>>, depth: Depth) -> Vec<Json> {
    let (mut sf, mut tf) = (Vec::new(), Vec::new());
    flatten(src, depth, &mut sf);
    flatten(tgt, depth, &mut tf);
    let ti: HashMap<&str, usize> = tf.iter().enumerate().map(|(i, (x, _))| (x.as_str(), i)).collect();
    let si: HashMap<&str, usize> = sf.iter().enumerate().map(|(i, (x, _))| (x.as_str(), i)).collect();
    let mut out = Vec::new();
    for (x, s) in &sf {
        match ti.get(x.as_str()) {
            None => out.push(json!({
                "action": "remove", "xpath": x, "sourceData": wrapped(s, chain_map(model, s, Some(0))),
            })),
            Some(&j) => out.extend(replaced(model, s, &tf[j].1)),
        }
    }
    for (x, t) in &tf {
        if !si.contains_key(x.as_str()) {
            out.push(json!({
                "action": "create", "xpath": x, "targetData": wrapped(t, chain_map(model, t, Some(0))),
            }));
        }
    }
    out
}

/// The report with grouping: siblings removed or created together in one
/// entry each, at their parent's xpath.
fn grouped(model: &Model, src: &[Chain<'_>], tgt: &[Chain<'_>], depth: Depth, out: &mut Vec<Json>) {
    let sx: Vec<String> = src.iter().map(|c| xpath_of(c)).collect();
    let tx: Vec<String> = tgt.iter().map(|c| xpath_of(c)).collect();
    let removed: Vec<&Chain<'_>> = src.iter().zip(&sx).filter(|(_, x)| !tx.contains(x)).map(|(c, _)| c).collect();
    if let Some(first) = removed.first() {
        out.push(json!({
            "action": "remove", "xpath": group_xpath(first), "sourceData": merged(model, &removed, depth),
        }));
    }
    for (s, x) in src.iter().zip(&sx) {
        let Some(t) = tx.iter().position(|y| y == x).map(|i| &tgt[i]) else { continue };
        out.extend(replaced(model, s, t));
        if let Some(d) = deeper(depth) {
            grouped(model, &children_of(s), &children_of(t), d, out);
        }
    }
    let added: Vec<&Chain<'_>> = tgt.iter().zip(&tx).filter(|(_, x)| !sx.contains(x)).map(|(c, _)| c).collect();
    if let Some(first) = added.first() {
        out.push(json!({
            "action": "create", "xpath": group_xpath(first), "targetData": merged(model, &added, depth),
        }));
    }
}

fn nodes_at<'a>(tree: &'a Container, at: &Path) -> Vec<Chain<'a>> {
    if at.segments.is_empty() {
        children(tree).into_iter().map(|l| vec![l]).collect()
    } else {
        locate(tree, at)
    }
}

fn report(model: &Model, a: &Container, b: &Container, at: &Path, depth: Depth, grouping: bool) -> Json {
    let (src, tgt) = (nodes_at(a, at), nodes_at(b, at));
    if grouping {
        let mut out = Vec::new();
        grouped(model, &src, &tgt, depth, &mut out);
        Json::Array(out)
    } else {
        Json::Array(per_node(model, src, tgt, depth))
    }
}

/// GET `delta`: from this anchor to `target-anchor-name`, under `xpath`, to
/// the depth `descendants` gives (CPS's default: the nodes themselves).
pub fn between_anchors(src: &Anchor, tgt: &Anchor, call: &Call) -> Result<Reply, CpsError> {
    let xpath = call.param("xpath").unwrap_or("/");
    let at = instance(src, xpath)?;
    let depth = data::descendants(call, 2)?;
    let grouping = call.bool_param("grouping-enabled")?;
    let a = read(src, &at, depth)?;
    let b = read(tgt, &at, depth)?;
    let yang = yang_model(src)?;
    Ok(reply(report(yang.model(), &a, &b, &at, depth, grouping), super::xml::wanted(call)))
}

/// A report as JSON, or as CPS's XML.
fn reply(report: Json, xml: bool) -> Reply {
    if xml {
        Reply::Xml(super::xml::delta_report(&report))
    } else {
        Reply::Json(report, vec![])
    }
}

/// Whether the client asks for XML with its `Accept` (CPS's POST `delta`
/// takes the posted document's format from it too).
fn accepts_xml(call: &Call) -> bool {
    call.headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.to_ascii_lowercase().contains("application/xml"))
}

/// POST `delta`: from this anchor to the document of the `targetData` part,
/// under `xpath`, with all descendants. The document is XML when the
/// `Accept` header names XML (as CPS reads it) or when it starts with `<`;
/// the report is XML when `Accept` names XML. With a `yangResourceFile`
/// part (a `.yang` file or a `.zip` of them), the document is read against
/// that schema instead of the anchor's.
pub fn with_document(src: &Anchor, call: &Call) -> Result<Reply, CpsError> {
    let xpath = call.param("xpath").unwrap_or("/");
    let at = instance(src, xpath)?;
    let grouping = call.bool_param("grouping-enabled")?;
    let parts = files::multipart(call.content_type(), &call.body).map_err(|e| CpsError::bad("Invalid upload", e))?;
    let doc = parts
        .iter()
        .find(|p| p.name == "targetData")
        .ok_or_else(|| CpsError::bad("Missing file", "Required part 'targetData' is not present."))?;
    if doc.data.iter().all(u8::is_ascii_whitespace) {
        return Err(CpsError::bad("Failed to read data file", "file is empty"));
    }
    let xml_out = accepts_xml(call);
    let xml_in = xml_out || doc.data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
    let (store, yang) = match parts.iter().find(|p| p.name == "yangResourceFile") {
        Some(_) => {
            let (modules, _) = data::upload_parts(&parts, "yangResourceFile")?;
            let texts: Vec<(String, String)> =
                modules.iter().map(|m| (format!("{}.yang", m.name), m.text.clone())).collect();
            let store = data::scratch_of(&texts)?;
            let yang = store
                .yang_schema()
                .map_err(|e| CpsError::internal(e.to_string()))?
                .ok_or_else(|| CpsError::internal("the uploaded schema did not load".into()))?;
            (store, yang)
        }
        None => (scratch(src)?, yang_model(src)?),
    };
    let body: Json = if xml_in {
        let text =
            std::str::from_utf8(&doc.data).map_err(|_| CpsError::bad("Failed to read data file", "not UTF-8"))?;
        data::xml_data(src, &yang, &Path::root(), text)?
    } else {
        serde_json::from_slice(&doc.data)
            .map_err(|e| CpsError::bad("Data Validation Failed", format!("targetData is not JSON: {e}")))?
    };
    let ws = writes(yang.model(), &Path::root(), &body, false)?;
    let edits = edits_of(&store, &ws, Operation::Merge).map_err(|e| data::data_error(src, e, false))?;
    store.running().apply(&edits).map_err(|e| data::data_error(src, e, false))?;
    let b = match store.running().get(&at.to_string(), ReadOptions::default()) {
        Ok(b) => b,
        Err(canopy::Error::Data(canopy_core::Error::NotFound { .. })) => Container::default(),
        Err(e) => return Err(data::data_error(src, e, false)),
    };
    let a = read(src, &at, None)?;
    let src_yang = yang_model(src)?;
    Ok(reply(report(src_yang.model(), &a, &b, &at, None, grouping), xml_out))
}

/// An XML delta report as the JSON one: each side's elements read against
/// the schema, below the entry's xpath (or beside it, for elements naming
/// the node at the xpath itself).
fn xml_report(anchor: &Anchor, call: &Call) -> Result<Vec<Json>, CpsError> {
    let text = std::str::from_utf8(&call.body).map_err(|_| invalid("the XML delta report is not UTF-8".into()))?;
    let doc = super::xml::parse(text)?;
    let yang = yang_model(anchor)?;
    let model = yang.model();
    let mut out = Vec::new();
    for e in super::xml::entries(&doc) {
        let mut m = Map::new();
        m.insert("action".into(), json!(e.action));
        let Some(xpath) = e.xpath else {
            out.push(Json::Object(m));
            continue;
        };
        let at = if xpath == "/" {
            Path::root()
        } else {
            cpath::to_instance(&xpath, model).map_err(|e| data::path_error(&e))?
        };
        m.insert("xpath".into(), json!(xpath));
        for (field, ids) in [("sourceData", e.source), ("targetData", e.target)] {
            let Some(ids) = ids else { continue };
            let nodes: Vec<roxmltree::Node<'_, '_>> = ids.iter().filter_map(|i| doc.get_node(*i)).collect();
            let own = at.last().is_some_and(|l| nodes.iter().all(|n| n.tag_name().name() == local(&l.name)));
            let parent = if own { at.parent().unwrap_or_default() } else { at.clone() };
            let pidx = data::schema_at(model, &parent);
            let data = if nodes.is_empty() {
                Json::Object(Map::new())
            } else {
                data::xml_elements_json(anchor, &yang, &parent, pidx, &nodes)?
            };
            // CPS's maps name nodes without their module.
            let unqualified: Map<String, Json> = match data {
                Json::Object(d) => d.into_iter().map(|(k, v)| (local(&k).to_string(), v)).collect(),
                _ => Map::new(),
            };
            m.insert(field.into(), Json::Object(unqualified));
        }
        out.push(Json::Object(m));
    }
    Ok(out)
}

fn invalid(details: String) -> CpsError {
    CpsError::bad("Data Validation Failed", details)
}

/// The data of an entry of one node at `at`: `{name: data}` or
/// `{name: [data]}` naming that node (for a list entry, with its keys).
fn own_data(at: &Path, data: &Map<String, Json>) -> Option<Map<String, Json>> {
    let last = at.last()?;
    let (name, v) = data.iter().next().filter(|_| data.len() == 1)?;
    if name != local(&last.name) {
        return None;
    }
    let obj = match v {
        Json::Object(o) => o,
        Json::Array(a) if a.len() == 1 => a[0].as_object()?,
        _ => return None,
    };
    let keys_match = match &last.selector {
        Selector::Keys(kv) => kv
            .iter()
            .all(|(k, v)| obj.get(local(k)).is_none_or(|x| data::key_text(x).is_some_and(|t| data::same_key(&t, v)))),
        _ => true,
    };
    keys_match.then(|| obj.clone())
}

fn data_of<'e>(e: &'e Json, side: &str) -> Option<&'e Map<String, Json>> {
    e.get(side).and_then(Json::as_object)
}

/// POST `applyChangesInDeltaReport`: every entry in one transaction, all or
/// nothing. `create` adds the nodes its `targetData` names below its xpath
/// (or the node at its xpath itself, when that is what it names),
/// `remove` deletes the nodes its `sourceData` names (likewise), `replace`
/// sets the leaves of `targetData` on the node at its xpath and removes
/// those only in `sourceData`.
pub fn apply(anchor: &Anchor, call: &Call) -> Result<Reply, CpsError> {
    let entries = if data::is_xml(call) {
        xml_report(anchor, call)?
    } else {
        match data::body_json(call)? {
            Json::Array(entries) => entries,
            _ => return Err(invalid("a delta report is a JSON array".into())),
        }
    };
    let yang = yang_model(anchor)?;
    let model = yang.model();
    let s = anchor.store.running();
    let mut edits = Vec::new();
    // Nodes the report removes: a node's own entry follows its parent's in
    // a report without grouping, and is then already gone.
    let mut removed: Vec<Path> = Vec::new();
    for e in &entries {
        let action = e["action"].as_str().unwrap_or("");
        let xpath = e["xpath"].as_str().ok_or_else(|| invalid("a delta entry needs an xpath".into()))?;
        let at = if xpath == "/" {
            Path::root()
        } else {
            cpath::to_instance(xpath, model).map_err(|e| data::path_error(&e))?
        };
        match action {
            "create" | "remove" => {
                let side = if action == "create" { "targetData" } else { "sourceData" };
                let Some(d) = data_of(e, side) else {
                    if action == "remove" && !at.segments.is_empty() {
                        if !removed.iter().any(|d| d.is_prefix_of(&at)) {
                            edits.push(Edit::delete(at.clone()));
                            removed.push(at.clone());
                        }
                        continue;
                    }
                    return Err(invalid(format!("the {action} entry at {xpath} has no {side}")));
                };
                // The node at the xpath itself, or nodes below it.
                let parent = match own_data(&at, d) {
                    Some(_) => at.parent().unwrap_or_default(),
                    None => at.clone(),
                };
                let ws = writes(model, &parent, &Json::Object(d.clone()), false)?;
                if action == "create" {
                    edits.extend(edits_of(&anchor.store, &ws, Operation::Create).map_err(|e| data::data_error(anchor, e, false))?);
                } else {
                    for w in ws {
                        if !removed.iter().any(|d| d.is_prefix_of(&w.path)) {
                            edits.push(Edit::delete(w.path.clone()));
                            removed.push(w.path);
                        }
                    }
                }
            }
            "replace" => {
                if at.segments.is_empty() {
                    return Err(invalid("a replace entry names a data node, not `/`".into()));
                }
                let side = |name: &str| -> Map<String, Json> {
                    data_of(e, name).map(|d| own_data(&at, d).unwrap_or_else(|| d.clone())).unwrap_or_default()
                };
                let (source, target) = (side("sourceData"), side("targetData"));
                let keys: Vec<String> = match &at.last().map(|l| &l.selector) {
                    Some(Selector::Keys(kv)) => kv.iter().map(|(k, _)| local(k).to_string()).collect(),
                    _ => Vec::new(),
                };
                for (leaf, v) in target.iter().filter(|(l, _)| !keys.contains(l)) {
                    let mut m = Map::new();
                    m.insert(leaf.clone(), v.clone());
                    let p = at.child(leaf.clone(), Selector::None);
                    edits.push(
                        s.parse_edit(Operation::Merge, p, Some(&Json::Object(m).to_string()), None)
                            .map_err(|e| data::data_error(anchor, e, false))?,
                    );
                }
                for leaf in source.keys().filter(|l| !target.contains_key(*l) && !keys.contains(l)) {
                    edits.push(Edit {
                        op: Operation::Remove,
                        path: at.child(leaf.clone(), Selector::None),
                        value: None,
                        insert: None,
                    });
                }
            }
            other => {
                return Err(CpsError::bad(
                    "Invalid 'action' in delta report.",
                    format!("Unsupported action '{other}' at xpath: {xpath}. Valid actions are: 'create', 'remove' or 'replace'."),
                ))
            }
        }
    }
    s.apply(&edits).map_err(|e| data::data_error(anchor, e, false))?;
    Ok(Reply::Status(StatusCode::CREATED))
}
