//! The data, query and delta handlers of the CPS API, and the conversions
//! between CPS's JSON (unqualified names, module prefixes on top-level nodes
//! of replies) and canopy's trees.

use axum::http::StatusCode;
use canopy::{Container, Edit, Node, Operation, Path, ReadOptions, Store, Value};
use canopy_core::path::Selector;
use canopy_yang::model::Model;
use serde_json::{json, Map, Value as Json};

use super::path::{self as cpath, children, local, Chain, Loc};
use super::registry::{Anchor, ModuleRef, Registry};
use super::{files, Call, CpsError, Reply};

pub(super) fn yang_model(anchor: &Anchor) -> Result<std::sync::Arc<canopy::YangSchema>, CpsError> {
    anchor
        .store
        .yang_schema()
        .map_err(|e| CpsError::internal(e.to_string()))?
        .ok_or_else(|| CpsError::internal(format!("anchor {} has no schema", anchor.name)))
}

pub(super) fn path_error(e: &cpath::PathError) -> CpsError {
    CpsError::bad("Error while parsing cpsPath expression", e.to_string())
}

/// A canopy error as CPS reports it; `get` for the 404 of a missing node.
pub(super) fn data_error(anchor: &Anchor, e: canopy::Error, get: bool) -> CpsError {
    match e {
        canopy::Error::Data(canopy_core::Error::Exists { path }) => CpsError::exists(format!(
            "1 data node(s) already exist for anchor {} and dataspace {}: {}",
            anchor.name,
            anchor.dataspace,
            cps_xpath(&path)
        )),
        canopy::Error::Data(canopy_core::Error::NotFound { path }) => not_found(anchor, &cps_xpath(&path), get),
        e if e.is_user_error() => CpsError::bad("Data Validation Failed", e.to_string()),
        e => CpsError::internal(e.to_string()),
    }
}

/// A canopy path as CPS writes an xpath (`/shops/bookstore/categories[@code='1']`).
fn cps_xpath(path: &str) -> String {
    path.parse::<Path>().map_or_else(|_| path.to_string(), |p| xpath_text(&p))
}

fn not_found(anchor: &Anchor, xpath: &str, get: bool) -> CpsError {
    CpsError::not_found(
        if get { StatusCode::NOT_FOUND } else { StatusCode::BAD_REQUEST },
        format!(
            "DataNode with xpath {xpath} was not found for anchor {} and dataspace {}.",
            anchor.name, anchor.dataspace
        ),
    )
}

// --- uploads --------------------------------------------------------------------

/// The modules of a schema set upload: `.yang` files and `.zip` archives of
/// them, compiled together to check them. Leafrefs whose paths do not
/// resolve, which libyang refuses and CPS's YANG parser accepts, are relaxed
/// to string leaves (the modules' texts say so where they were) and listed.
pub fn upload_modules(call: &Call) -> Result<(Vec<ModuleRef>, Vec<canopy_yang::Relaxation>), CpsError> {
    let parts = files::multipart(call.content_type(), &call.body).map_err(|e| CpsError::bad("Invalid upload", e))?;
    upload_parts(&parts, "file")
}

/// The modules of the parts named `field` of an upload (see [`upload_modules`]).
pub(super) fn upload_parts(
    parts: &[files::Part],
    field: &str,
) -> Result<(Vec<ModuleRef>, Vec<canopy_yang::Relaxation>), CpsError> {
    let mut texts = Vec::new();
    for p in parts.iter().filter(|p| p.name == field) {
        let name = p.filename.clone().unwrap_or_default();
        let lower = name.to_ascii_lowercase();
        let utf8 = |n: &str, b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| CpsError::bad("Invalid file", format!("{n} is not UTF-8 text")))
        };
        if lower.ends_with(".yang") {
            texts.push((name.clone(), utf8(&name, &p.data)?));
        } else if lower.ends_with(".zip") {
            let entries = files::unzip(&p.data, ".yang").map_err(|e| CpsError::bad("Invalid zip file", e))?;
            if entries.is_empty() {
                return Err(CpsError::bad("Model validation failed", format!("{name}: no .yang file in the archive")));
            }
            for (n, b) in entries {
                texts.push((n.clone(), utf8(&n, &b)?));
            }
        } else {
            return Err(CpsError::bad(
                "Unsupported file type.",
                format!("Filename: {name}. Only .yang and .zip files."),
            ));
        }
    }
    if texts.is_empty() {
        return Err(CpsError::bad("Missing file", format!("Required part '{field}' is not present.")));
    }
    let dir = super::registry::module_dir(&texts).map_err(|e| CpsError::internal(e.to_string()))?;
    // A module read from the upload's directory is named by its file there:
    // the message names the file as uploaded, not the server's directory.
    let within = format!("{}/", dir.path().display());
    let (schema, relaxed) = canopy::YangSchema::add_texts_relaxed(&[], &texts, &[dir.path().to_path_buf()])
        .map_err(|e| CpsError::bad("Model validation failed", e.to_string().replace(&within, "")))?;
    let modules = schema
        .modules()
        .iter()
        .map(|m| {
            let (namespace, prefix) = super::registry::header(&m.text);
            ModuleRef { name: m.name.clone(), revision: m.revision.clone(), namespace, prefix, text: m.text.clone() }
        })
        .collect();
    Ok((modules, relaxed))
}

// --- output ---------------------------------------------------------------------

pub(super) fn value_json(v: &Value) -> Json {
    match v {
        Value::String(s) => Json::String(s.to_string()),
        Value::Number(n) => {
            serde_json::from_str::<serde_json::Number>(n).map_or_else(|_| Json::String(n.to_string()), Json::Number)
        }
        Value::Bool(b) => Json::Bool(*b),
        Value::Empty => Json::Null,
    }
}

/// Where a node is in the schema, to print 64-bit integers as numbers.
#[derive(Clone, Copy)]
pub struct At<'m> {
    model: &'m Model,
    idx: Option<usize>,
}

impl<'m> At<'m> {
    /// The root of `model`.
    pub fn top(model: &'m Model) -> At<'m> {
        At { model, idx: None }
    }

    pub fn child(self, name: &str) -> At<'m> {
        let idx = match self.idx {
            None => self.model.top.get(name).copied(),
            Some(i) => self.model.nodes[i].children.get(name).copied(),
        };
        At { model: self.model, idx }
    }

    pub fn int64(self) -> bool {
        self.idx.is_some_and(|i| self.model.nodes[i].int64)
    }

    /// Whether a leaf or leaf-list child of this node is a 64-bit integer
    /// (off the schema: none).
    pub fn int64_children(self) -> bool {
        match self.idx {
            None => self.model.top.values().any(|&c| self.model.nodes[c].int64),
            Some(i) => self.model.nodes[i].int64_children,
        }
    }

    fn of(model: &'m Model, chain: &[Loc<'_>]) -> At<'m> {
        chain.iter().fold(At { model, idx: None }, |at, l| at.child(l.name))
    }
}

pub(super) fn typed_json(v: &Value, at: At<'_>) -> Json {
    match v {
        Value::String(s) if at.int64() => {
            serde_json::from_str::<serde_json::Number>(s).map_or_else(|_| Json::String(s.to_string()), Json::Number)
        }
        v => value_json(v),
    }
}

/// A node as CPS's data map: leaves, then (with depth left) child containers
/// as objects and lists as arrays, names without module prefixes.
pub fn data_map(c: &Container, depth: Option<usize>, at: At<'_>) -> Map<String, Json> {
    let mut m = Map::new();
    let deeper = match depth {
        Some(0) => None,
        Some(d) => Some(Some(d - 1)),
        None => Some(None),
    };
    for (name, node) in c.children.iter() {
        let key = local(name).to_string();
        let cat = at.child(name);
        match node {
            Node::Leaf { value, .. } => {
                m.insert(key, typed_json(value, cat));
            }
            Node::LeafList(v) => {
                m.insert(key, v.iter().map(|e| typed_json(&e.value, cat)).collect());
            }
            Node::AnyData { value, .. } => {
                m.insert(key, (**value).clone());
            }
            Node::Container(cc) => {
                if let Some(d) = deeper {
                    m.insert(key, Json::Object(data_map(cc, d, cat)));
                }
            }
            Node::List(l) => {
                if let Some(d) = deeper {
                    m.insert(key, l.entries().map(|e| Json::Object(data_map(e, d, cat))).collect());
                }
            }
        }
    }
    m
}

pub(super) fn chain_map(model: &Model, chain: &[Loc<'_>], depth: Option<usize>) -> Map<String, Json> {
    data_map(chain.last().expect("a node").node, depth, At::of(model, chain))
}

/// `prefix:name` of a result: CPS names every node with the prefix of its
/// top-level node's module.
pub(super) fn qualified(anchor: &Anchor, chain: &[Loc<'_>]) -> String {
    let top = chain.first().map_or("", |l| l.name);
    let module = top.split_once(':').map_or("", |(m, _)| m);
    let last = chain.last().map_or("", |l| local(l.name));
    format!("{}:{last}", anchor.set.prefix_of(module))
}

pub(super) fn node_map(anchor: &Anchor, model: &Model, chain: &[Loc<'_>], depth: Option<usize>) -> Json {
    let mut m = Map::new();
    m.insert(qualified(anchor, chain), Json::Object(chain_map(model, chain, depth)));
    Json::Object(m)
}

/// `descendants` (v2, v3) or `include-descendants` (v1): levels of child
/// nodes to include, `None` for all.
pub(super) fn descendants(call: &Call, version: u8) -> Result<Option<usize>, CpsError> {
    if version == 1 {
        return Ok(if call.bool_param("include-descendants")? { None } else { Some(0) });
    }
    let raw = call.param("descendants").unwrap_or("");
    match raw {
        "" | "none" | "0" => Ok(Some(0)),
        "all" | "-1" => Ok(None),
        "direct" | "1" => Ok(Some(1)),
        n if n.bytes().all(|b| b.is_ascii_digit()) => n.parse::<usize>().map(Some).map_err(|_| {
            CpsError::bad(
                "FetchDescendantsOption validation error.",
                format!("{n} is not valid fetch descendants option"),
            )
        }),
        n => Err(CpsError::bad(
            "FetchDescendantsOption validation error.",
            format!("{n} is not valid fetch descendants option"),
        )),
    }
}

// --- reading --------------------------------------------------------------------

/// The tree at `at` down to `depth` levels below the nodes there: at the
/// root, the nodes are the top-level ones, a level below the root itself.
pub(super) fn read(anchor: &Anchor, at: &Path, depth: Option<usize>) -> Result<Container, CpsError> {
    let below = if at.segments.is_empty() { 2 } else { 1 };
    let opts = ReadOptions { depth: depth.map(|d| d + below), ..ReadOptions::default() };
    anchor.store.running().get(&at.to_string(), opts).map_err(|e| data_error(anchor, e, true))
}

pub(super) fn same_key(a: &str, b: &str) -> bool {
    a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

/// The nodes of `root` at an instance path (every entry of a list when the
/// path names the list without keys).
pub(super) fn locate<'a>(root: &'a Container, at: &Path) -> Vec<Chain<'a>> {
    let mut found: Vec<Chain<'a>> = vec![vec![Loc { name: "", keys: Vec::new(), node: root }]];
    for seg in &at.segments {
        let mut next = Vec::new();
        for chain in &found {
            for child in children(chain.last().expect("a chain").node) {
                if child.name != seg.name {
                    continue;
                }
                let hit = match &seg.selector {
                    Selector::Keys(kv) => {
                        kv.iter().all(|(k, v)| child.keys.iter().any(|(ck, cv)| ck == k && same_key(cv, v)))
                    }
                    _ => true,
                };
                if hit {
                    let mut c = chain.clone();
                    c.push(child);
                    next.push(c);
                }
            }
        }
        found = next;
    }
    for c in &mut found {
        c.remove(0);
    }
    found.retain(|c| !c.is_empty());
    found
}

pub(super) fn instance(anchor: &Anchor, xpath: &str) -> Result<Path, CpsError> {
    if xpath == "/" || xpath.is_empty() {
        return Ok(Path::root());
    }
    let yang = yang_model(anchor)?;
    cpath::to_instance(xpath, yang.model()).map_err(|e| path_error(&e))
}

pub fn get_node(anchor: &std::sync::Arc<Anchor>, call: &Call, version: u8) -> Result<Reply, CpsError> {
    let depth = descendants(call, version)?;
    let xpath = call.param("xpath").unwrap_or("/");
    let at = instance(anchor, xpath)?;
    let yang = yang_model(anchor)?;
    // A container (or the whole anchor) with all its descendants is written
    // while it is read; the rest, and every error, below.
    if depth.is_none() {
        if let Some(reply) = super::stream::get_node(anchor, &yang, &at, version)? {
            return Ok(reply);
        }
    }
    get_node_buffered(anchor, call, version)
}

/// GET `node` from the tree of the node read whole.
pub(super) fn get_node_buffered(anchor: &Anchor, call: &Call, version: u8) -> Result<Reply, CpsError> {
    let depth = descendants(call, version)?;
    let xpath = call.param("xpath").unwrap_or("/");
    let at = instance(anchor, xpath)?;
    let yang = yang_model(anchor)?;
    let model = yang.model();
    let tree = read(anchor, &at, depth)?;
    let found = if at.segments.is_empty() {
        children(&tree).into_iter().map(|l| vec![l]).collect()
    } else {
        locate(&tree, &at)
    };
    if found.is_empty() {
        return Err(match at.segments.is_empty() {
            true => CpsError::not_found(
                StatusCode::NOT_FOUND,
                format!("DataNode not found for anchor {} and dataspace {}.", anchor.name, anchor.dataspace),
            ),
            false => not_found(anchor, xpath, true),
        });
    }
    let reply = match version {
        1 => node_map(anchor, model, &found[0], depth),
        2 => found.iter().map(|c| node_map(anchor, model, c, depth)).collect(),
        _ => {
            let mut m = Map::new();
            for c in &found {
                let name = qualified(anchor, c);
                let data = Json::Object(chain_map(model, c, depth));
                if c.last().is_some_and(|l| !l.keys.is_empty()) {
                    match m.entry(name).or_insert_with(|| Json::Array(Vec::new())) {
                        Json::Array(a) => a.push(data),
                        other => *other = data,
                    }
                } else {
                    m.insert(name, data);
                }
            }
            Json::Object(m)
        }
    };
    Ok(Reply::Json(reply, vec![]))
}

// --- writing --------------------------------------------------------------------

/// The schema node at an instance path (`None` for the root).
pub(super) fn schema_at(model: &Model, at: &Path) -> Option<usize> {
    let mut idx = None;
    for seg in &at.segments {
        idx = Some(match idx {
            None => *model.top.get(&seg.name)?,
            Some(p) => {
                let n: &canopy_yang::model::SNode = &model.nodes[p];
                *n.children.get(&seg.name)?
            }
        });
    }
    idx
}

pub(super) fn child_schema(model: &Model, parent: Option<usize>, name: &str) -> Option<usize> {
    let (module, want) = name.split_once(':').map_or((None, name), |(m, n)| (Some(m), n));
    let pick = |(n, i): (&canopy_core::tree::Name, &usize)| {
        (local(n) == want && module.is_none_or(|m| model.nodes[*i].module == m)).then_some(*i)
    };
    match parent {
        None => model.top.iter().find_map(pick),
        Some(p) => model.nodes[p].children.iter().find_map(pick),
    }
}

pub(super) fn key_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One write of a CPS body: (path, RFC 7951 JSON of the node there).
pub(super) struct Write {
    pub path: Path,
    pub json: String,
}

/// The members of a CPS body under `parent`, as canopy writes: containers and
/// leaves whole, lists entry by entry (or whole, with `whole_lists`).
pub(super) fn writes(model: &Model, parent: &Path, body: &Json, whole_lists: bool) -> Result<Vec<Write>, CpsError> {
    let Json::Object(members) = body else {
        return Err(CpsError::bad("Data Validation Failed", "the data must be a JSON object naming its nodes"));
    };
    let pidx = schema_at(model, parent);
    let mut out = Vec::new();
    for (name, value) in members {
        let idx = child_schema(model, pidx, name).ok_or_else(|| {
            CpsError::bad("Data Validation Failed", format!("no data node `{name}` under {}", xpath_text(parent)))
        })?;
        let n = &model.nodes[idx];
        let canon = n.name.clone();
        let member = |v: &Json| {
            let mut m = Map::new();
            m.insert(canon.to_string(), v.clone());
            Json::Object(m).to_string()
        };
        if n.kind == canopy_core::schema::NodeKind::List && !whole_lists {
            let entries = match value {
                Json::Array(a) => a.clone(),
                Json::Object(_) => vec![value.clone()],
                _ => return Err(CpsError::bad("Data Validation Failed", format!("list `{name}` takes objects"))),
            };
            for e in entries {
                let mut keys = Vec::new();
                for k in &n.keys {
                    let v = e.get(local(k)).and_then(key_text).ok_or_else(|| {
                        CpsError::bad("Data Validation Failed", format!("an entry of list `{name}` has no key `{k}`"))
                    })?;
                    keys.push((k.clone(), v.into()));
                }
                out.push(Write {
                    path: parent.child(canon.clone(), Selector::Keys(keys)),
                    json: member(&Json::Array(vec![e])),
                });
            }
        } else {
            out.push(Write { path: parent.child(canon.clone(), Selector::None), json: member(value) });
        }
    }
    Ok(out)
}

pub(super) fn xpath_text(p: &Path) -> String {
    if p.segments.is_empty() {
        return "/".into();
    }
    let mut s = String::new();
    for seg in &p.segments {
        s.push('/');
        s.push_str(local(&seg.name));
        if let Selector::Keys(kv) = &seg.selector {
            let inner: Vec<String> =
                kv.iter().map(|(k, v)| format!("@{}='{}'", local(k), v.replace('\'', "''"))).collect();
            s.push_str(&format!("[{}]", inner.join(" and ")));
        }
    }
    s
}

pub(super) fn is_xml(call: &Call) -> bool {
    let ct = call.content_type().to_ascii_lowercase();
    ct.starts_with("application/xml") || ct.starts_with("text/xml")
}

pub(super) fn body_json(call: &Call) -> Result<Json, CpsError> {
    if is_xml(call) {
        return Err(CpsError::bad("Data Validation Failed", "this request takes a JSON body (application/json)"));
    }
    serde_json::from_slice(&call.body)
        .map_err(|e| CpsError::bad("Data Validation Failed", format!("malformed JSON: {e}")))
}

/// A data body in JSON or in XML (`application/xml`) below `parent`, as
/// the JSON the writes read.
fn data_body(call: &Call, anchor: &Anchor, yang: &canopy::YangSchema, parent: &Path) -> Result<Json, CpsError> {
    if !is_xml(call) {
        return body_json(call);
    }
    let text = std::str::from_utf8(&call.body)
        .map_err(|_| CpsError::bad("Data Validation Failed", "the XML body is not UTF-8"))?;
    xml_data(anchor, yang, parent, text)
}

/// The namespace of the schema node named `name` (local name) below
/// `parent` (`None`: the top), from the module that defines it.
fn namespace_of(anchor: &Anchor, model: &Model, parent: Option<usize>, name: &str) -> Option<String> {
    let idx = child_schema(model, parent, name)?;
    let module = &model.nodes[idx].module;
    anchor.set.modules.iter().find(|m| &m.name == module).map(|m| m.namespace.clone())
}

/// An XML data document below `parent` as JSON, read as CPS reads it: at
/// the root, the document element is a top-level data node, or a wrapper
/// (`data`, or named after a module of the set, in any namespace) holding
/// top-level nodes; below a node, the document element is one child of it,
/// or a wrapper named as the parent (or `data`) holding its children.
/// Elements without a namespace are taken in their schema node's module's
/// namespace (CPS's documents name none); libyang reads them against the
/// schema.
pub(super) fn xml_data(
    anchor: &Anchor,
    yang: &canopy::YangSchema,
    parent: &Path,
    text: &str,
) -> Result<Json, CpsError> {
    let bad = |m: String| CpsError::bad("Data Validation Failed", m);
    let doc = crate::encoding::parse_xml(text).map_err(|e| bad(e.message))?;
    let top = doc.root_element();
    let name = top.tag_name().name();
    let model = yang.model();
    let pidx = schema_at(model, parent);
    let wrapper = match parent.last() {
        None => {
            let data_node = model.top.keys().any(|k| local(k) == name);
            !data_node && (name == "data" || yang.modules().iter().any(|m| m.name == name))
        }
        Some(seg) => name == "data" || name == local(&seg.name),
    };
    let nodes: Vec<roxmltree::Node<'_, '_>> =
        if wrapper { top.children().filter(roxmltree::Node::is_element).collect() } else { vec![top] };
    if nodes.is_empty() {
        return Err(bad(format!("the XML element `{name}` holds no data node")));
    }
    xml_elements_json(anchor, yang, parent, pidx, &nodes)
}

/// Data elements below `parent` (schema node `pidx`) as one JSON object.
pub(super) fn xml_elements_json(
    anchor: &Anchor,
    yang: &canopy::YangSchema,
    parent: &Path,
    pidx: Option<usize>,
    nodes: &[roxmltree::Node<'_, '_>],
) -> Result<Json, CpsError> {
    let bad = |m: String| CpsError::bad("Data Validation Failed", m);
    let model = yang.model();
    let elements: Vec<String> = nodes
        .iter()
        .map(|n| match namespace_of(anchor, model, pidx, n.tag_name().name()) {
            Some(ns) => super::xml::in_namespace(*n, &ns),
            None => crate::encoding::standalone(*n),
        })
        .collect();
    let json = crate::encoding::data_to_json(yang, parent, &elements).map_err(|e| bad(e.message))?;
    serde_json::from_str(&json).map_err(|e| CpsError::internal(format!("re-reading the XML body as JSON: {e}")))
}

/// CPS's observed-timestamp: `yyyy-MM-dd'T'HH:mm:ss.SSSZ` (`Z` as `+hhmm`).
fn check_timestamp(call: &Call) -> Result<(), CpsError> {
    let Some(t) = call.param("observed-timestamp").filter(|t| !t.is_empty()) else { return Ok(()) };
    let b = t.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let ok = b.len() == 28
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..23)
        && matches!(b[23], b'+' | b'-')
        && digits(24..28);
    if ok {
        Ok(())
    } else {
        Err(CpsError::bad(
            "observed-timestamp must be in ISO format",
            format!("`{t}` is not yyyy-MM-ddTHH:mm:ss.SSS+hhmm"),
        ))
    }
}

fn exists(anchor: &Anchor, at: &Path) -> Result<bool, CpsError> {
    exists_in(anchor, anchor.store.running().pin().ok().as_ref(), at)
}

/// [`exists`] reading through `pinned` where it can (one snapshot for the
/// nodes of a whole PATCH).
fn exists_in(anchor: &Anchor, pinned: Option<&canopy::Pinned<'_>>, at: &Path) -> Result<bool, CpsError> {
    if at.segments.is_empty() {
        return Ok(true);
    }
    // A container or entry as stored is one fragment's lookup; anything else
    // (a key spelled otherwise than stored, a node that is not there) is
    // looked for in the tree, which reads only what is below `at`'s nodes
    // down to one level.
    if matches!(pinned.map(|p| p.stored_node(&at.to_string())), Some(Ok(Some(_)))) {
        return Ok(true);
    }
    let tree = read(anchor, at, Some(0))?;
    Ok(!locate(&tree, at).is_empty())
}

pub(super) fn edits_of(store: &Store, ws: &[Write], op: Operation) -> Result<Vec<Edit>, canopy::Error> {
    let s = store.running();
    ws.iter().map(|w| s.parse_edit(op, w.path.clone(), Some(&w.json), None)).collect()
}

/// A store holding nothing but the anchor's schema: dry runs and posted
/// documents are validated in it.
pub(super) fn scratch(anchor: &Anchor) -> Result<Store, CpsError> {
    scratch_of(&anchor.set.texts())
}

/// An empty in-memory store with the modules `texts`.
pub(super) fn scratch_of(texts: &[(String, String)]) -> Result<Store, CpsError> {
    let store = Store::from_backend(
        Box::new(canopy_store::memory::MemoryBackend::new()),
        "memory:cps-scratch",
        canopy::Options::default(),
    )
    .map_err(|e| CpsError::internal(e.to_string()))?;
    let dir = super::registry::module_dir(texts).map_err(|e| CpsError::internal(e.to_string()))?;
    store.schema_add_texts(texts, &[dir.path().to_path_buf()]).map_err(|e| CpsError::internal(e.to_string()))?;
    Ok(store)
}

/// Diffs of this many changes or more are freed after the reply.
const BIG_DIFF: usize = 256;

/// POST/PUT/PATCH/DELETE of `nodes` and `list-nodes`.
pub fn nodes(anchor: &Anchor, call: &Call, list: bool) -> Result<Reply, CpsError> {
    check_timestamp(call)?;
    let xpath = if list { call.required("xpath")? } else { call.param("xpath").unwrap_or("/") };
    let at = instance(anchor, xpath)?;
    let yang = yang_model(anchor)?;
    let method = call.method.as_str();
    if method == "DELETE" {
        let s = anchor.store.running();
        let edits = if at.segments.is_empty() {
            let tree = read(anchor, &at, Some(0))?;
            tree.children.iter().map(|(n, _)| Edit::delete(Path::root().child(n.clone(), Selector::None))).collect()
        } else {
            if !exists(anchor, &at)? {
                return Err(not_found(anchor, xpath, false));
            }
            vec![Edit::delete(at.clone())]
        };
        s.apply(&edits).map_err(|e| data_error(anchor, e, false))?;
        return Ok(Reply::Status(StatusCode::NO_CONTENT));
    }
    let dry = call.bool_param("dry-run")?;
    let (op, whole, status) = match (method, list) {
        ("POST", _) => (Operation::Create, false, StatusCode::CREATED),
        ("PUT", false) => (Operation::Replace, false, StatusCode::OK),
        ("PUT", true) => (Operation::Replace, true, StatusCode::OK),
        ("PATCH", false) => (Operation::Merge, false, StatusCode::OK),
        _ => {
            return Err(CpsError {
                status: StatusCode::METHOD_NOT_ALLOWED,
                message: "Method not allowed".into(),
                details: format!("{method} is not supported here"),
            })
        }
    };
    if dry {
        let store = scratch(anchor)?;
        let edits = body_edits(anchor, &store, &yang, &at, call, Operation::Merge, whole)?;
        store.running().apply(&edits).map_err(|e| data_error(anchor, e, false))?;
        return Ok(Reply::Status(StatusCode::OK));
    }
    let edits = body_edits(anchor, &anchor.store, &yang, &at, call, op, whole)?;
    if !exists(anchor, &at)? {
        return Err(not_found(anchor, xpath, false));
    }
    if op == Operation::Merge {
        let pinned = anchor.store.running().pin().ok();
        for e in &edits {
            if !exists_in(anchor, pinned.as_ref(), &e.path)? {
                return Err(not_found(anchor, &xpath_text(&e.path), false));
            }
        }
    }
    // The edits move into the transaction; they are read from the body again
    // only if another process commits first.
    let mut first = Some(edits);
    let commit = anchor
        .store
        .running()
        .apply_built(|| match first.take() {
            Some(edits) => Ok(edits),
            None => body_edits(anchor, &anchor.store, &yang, &at, call, op, whole)
                .map_err(|e| canopy::Error::Usage(format!("{}: {}", e.message, e.details))),
        })
        .map_err(|e| data_error(anchor, e, false))?;
    // A bulk write's diff holds what it created: freed after the reply.
    if commit.changes.len() >= BIG_DIFF {
        super::free_later(commit, false);
    }
    Ok(Reply::Status(status))
}

/// The edits of a write's body below `at`, built for `store`: a JSON body
/// read straight into edits, XML (and JSON that reader does not take)
/// through `serde_json` values.
fn body_edits(
    anchor: &Anchor,
    store: &Store,
    yang: &canopy::YangSchema,
    at: &Path,
    call: &Call,
    op: Operation,
    whole: bool,
) -> Result<Vec<Edit>, CpsError> {
    let model = yang.model();
    let direct = match is_xml(call) {
        true => None,
        false => super::edits::json_edits(store, model, at, &call.body, op, whole)?,
    };
    let edits = match direct {
        Some(edits) => edits,
        None => {
            let body = data_body(call, anchor, yang, at)?;
            let ws = writes(model, at, &body, whole)?;
            // The body's JSON values are copied into the writes: let them go
            // before the edits are built.
            drop(body);
            edits_of(store, &ws, op).map_err(|e| data_error(anchor, e, false))?
        }
    };
    if edits.is_empty() {
        return Err(CpsError::bad("Data Validation Failed", "the data holds no node"));
    }
    Ok(edits)
}

// --- queries --------------------------------------------------------------------

/// The results of a CPS path on one anchor: nodes (with their depth) or,
/// for the attribute axis, distinct `{leaf: value}` pairs.
fn run_query(anchor: &Anchor, cps_path: &str, depth: Option<usize>) -> Result<Vec<Json>, CpsError> {
    Ok(run_query_keyed(anchor, cps_path, depth)?.into_iter().map(|(_, v)| v).collect())
}

/// [`run_query`]'s results, each with what tells it from another: a node's
/// xpath, an attribute pair's JSON text.
fn run_query_keyed(anchor: &Anchor, cps_path: &str, depth: Option<usize>) -> Result<Vec<(String, Json)>, CpsError> {
    let q = cpath::parse(cps_path).map_err(|e| path_error(&e))?;
    let yang = yang_model(anchor)?;
    let Some(at) = cpath::plan(&q, yang.model()) else { return Ok(Vec::new()) };
    let tree =
        anchor.store.running().get(&at.to_string(), ReadOptions::default()).map_err(|e| data_error(anchor, e, true))?;
    let found = cpath::evaluate(&q, &tree);
    if let Some(attr) = &q.attribute {
        let mut seen: Vec<(String, Json)> = Vec::new();
        for chain in &found {
            for v in cpath::leaf_values(chain.last().expect("a node").node, attr) {
                let j = json!({ attr.as_str(): value_json(v) });
                let key = j.to_string();
                if !seen.iter().any(|(k, _)| *k == key) {
                    seen.push((key, j));
                }
            }
        }
        return Ok(seen);
    }
    Ok(found.iter().map(|c| (cpath::xpath_of(c), node_map(anchor, yang.model(), c, depth))).collect())
}

/// A composite query's results: those of its `cpsPath` combined with those
/// of each of its `conditions` (composite queries themselves) by its
/// `operator`: `and` (the default) keeps the results every one of them has,
/// `or` takes the results any of them has, in the order first found.
fn run_composite(anchor: &Anchor, q: &Json, depth: Option<usize>, at: &str) -> Result<Vec<(String, Json)>, CpsError> {
    let invalid = |d: String| CpsError::bad("Invalid composite query", d);
    let Json::Object(m) = q else {
        return Err(invalid(format!("{at} is not an object with cpsPath, operator and conditions")));
    };
    let operator = match m.get("operator") {
        None | Some(Json::Null) => "and".to_string(),
        Some(Json::String(o)) => o.to_ascii_lowercase(),
        Some(other) => return Err(invalid(format!("{at}.operator is {other}, not \"and\" or \"or\""))),
    };
    if operator != "and" && operator != "or" {
        return Err(invalid(format!("{at}.operator is \"{operator}\": the operators are \"and\" and \"or\"")));
    }
    let conditions = match m.get("conditions") {
        None | Some(Json::Null) => &Vec::new(),
        Some(Json::Array(c)) => c,
        Some(_) => return Err(invalid(format!("{at}.conditions is not a list of composite queries"))),
    };
    let mut sets = Vec::new();
    match m.get("cpsPath") {
        None | Some(Json::Null) => {}
        Some(Json::String(p)) => sets.push(run_query_keyed(anchor, p, depth)?),
        Some(_) => return Err(invalid(format!("{at}.cpsPath is not a string"))),
    }
    for (i, c) in conditions.iter().enumerate() {
        sets.push(run_composite(anchor, c, depth, &format!("{at}.conditions[{i}]"))?);
    }
    let mut sets = sets.into_iter();
    let Some(mut out) = sets.next() else {
        return Err(invalid(format!("{at} has neither a cpsPath nor conditions")));
    };
    for set in sets {
        if operator == "and" {
            out.retain(|(k, _)| set.iter().any(|(s, _)| s == k));
        } else {
            for (k, v) in set {
                if !out.iter().any(|(o, _)| *o == k) {
                    out.push((k, v));
                }
            }
        }
    }
    Ok(out)
}

/// POST `nodes/query` (v2): a composite query in the JSON body.
pub fn composite_query(anchor: &Anchor, call: &Call) -> Result<Reply, CpsError> {
    let depth = descendants(call, 2)?;
    let q: Json = serde_json::from_slice(&call.body).map_err(|e| {
        CpsError::bad("Parsing error occurred while converting JSON content to specific class type.", e.to_string())
    })?;
    let found = run_composite(anchor, &q, depth, "the query")?;
    Ok(Reply::Json(Json::Array(found.into_iter().map(|(_, v)| v).collect()), vec![]))
}

pub fn query(anchor: &std::sync::Arc<Anchor>, call: &Call, version: u8) -> Result<Reply, CpsError> {
    let depth = descendants(call, version)?;
    let cps_path = call.param("cps-path").unwrap_or("/");
    // Results inside the entries of one list are written entry by entry.
    let q = cpath::parse(cps_path).map_err(|e| path_error(&e))?;
    let yang = yang_model(anchor)?;
    // One entry by its keys is written from its fragments.
    if let Some(reply) = super::stream::query_entry(anchor, &yang, &q, depth)? {
        return Ok(reply);
    }
    if let Some(reply) = super::stream::query_reply(anchor, &yang, q, depth)? {
        return Ok(reply);
    }
    query_buffered(anchor, call, version)
}

/// A query's results gathered, then written.
pub(super) fn query_buffered(anchor: &Anchor, call: &Call, version: u8) -> Result<Reply, CpsError> {
    let depth = descendants(call, version)?;
    let cps_path = call.param("cps-path").unwrap_or("/");
    Ok(Reply::Json(Json::Array(run_query(anchor, cps_path, depth)?), vec![]))
}

pub fn query_dataspace(reg: &Registry, ds: &str, call: &Call) -> Result<Reply, CpsError> {
    let depth = descendants(call, 2)?;
    let cps_path = call.param("cps-path").unwrap_or("/");
    cpath::parse(cps_path).map_err(|e| path_error(&e))?;
    let page = |name: &str| -> Result<Option<usize>, CpsError> {
        match call.param(name) {
            None | Some("") => Ok(None),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                // CPS's words; its details do not say which parameter.
                _ => Err(CpsError::bad("Pagination validation error.", "Invalid page index or size")),
            },
        }
    };
    let (index, size) = (page("pageIndex")?, page("pageSize")?);
    let mut hits = Vec::new();
    for (name, _) in reg.anchors(ds)? {
        let anchor = reg.anchor(ds, &name)?;
        let nodes = run_query(&anchor, cps_path, depth)?;
        if !nodes.is_empty() {
            hits.push(json!({"anchorName": name, "dataNodes": nodes}));
        }
    }
    let (hits, pages) = match (index, size) {
        (Some(i), Some(s)) => {
            let pages = hits.len().div_ceil(s).max(1);
            (hits.into_iter().skip((i - 1).saturating_mul(s)).take(s).collect(), pages)
        }
        _ => (hits, 1),
    };
    Ok(Reply::Json(Json::Array(hits), vec![("total-pages", pages.to_string())]))
}
