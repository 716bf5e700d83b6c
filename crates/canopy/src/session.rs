//! Sessions: the API users call on one datastore (reads, edits, imports).

use std::borrow::Cow;

use canopy_core::diff::Subtree;
use canopy_core::edit::{canonical_path, Edit, Operation};
use canopy_core::path::query::{Axis, Query};
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, Insert, ListInfo, Node};
use canopy_core::Value;
use canopy_store::keys::Datastore;
use canopy_yang::WithDefaults;

use crate::error::{Error, Result};
use crate::read::{owned, selection, ReadOptions};
use crate::store::Session;
use crate::transaction::Commit;
use crate::view::ReadView;

impl Session<'_> {
    /// The datastore this session works on.
    pub fn datastore(&self) -> Datastore {
        self.ds
    }

    /// The same session on the datastore's stored contents: for operational,
    /// the state kept in the store (it outlives connections), without
    /// running's configuration, pushed state or providers.
    pub fn stored(self) -> Self {
        Session { stored: true, ..self }
    }

    /// Whether writes push connection-scoped operational state.
    pub(crate) fn pushes(&self) -> bool {
        self.ds == Datastore::Operational && !self.stored
    }

    /// Reads what `query` selects (an instance path or an XPath subset query)
    /// as one tree: each selected node with its subtree and its ancestors.
    ///
    /// # Errors
    /// [`Error::Data`] for a query that does not parse; backend errors.
    pub fn get(&self, query: &str, opts: ReadOptions) -> Result<Container> {
        let q = Query::parse(query)?;
        self.store.read_briefly(|view| {
            if let Some(tree) = self.scan_get(view, &q, opts)? {
                return Ok(tree);
            }
            self.store.with_view(view, self.ds, self.stored, &q, |tree, _, yang| selection(tree, &q, opts, yang))
        })
    }

    /// Reads what `query` selects and writes it as RFC 7951 JSON to `out`.
    /// When the whole datastore is selected from the cache, it is written
    /// straight from the cached tree, without a copy. Uncached, an instance
    /// path streams from the stored fragments, and a query that stays inside
    /// the entries of one list is evaluated entry by entry as the list's
    /// range is scanned, each result written before the next entry is read.
    ///
    /// # Errors
    /// As [`Session::get`], and write errors of `out`.
    pub fn get_json<W: std::io::Write>(&self, query: &str, opts: ReadOptions, pretty: bool, mut out: W) -> Result<()> {
        let q = Query::parse(query)?;
        let view = ReadView::new(self.store);
        // Uncached, a whole subtree streams from the stored fragments.
        let explicit = opts.with_defaults == WithDefaults::Explicit;
        let plain = !self.pushes() && explicit;
        // So does `//name[keys]` where the schema has `name` in one place.
        let descendant = q.absolute && q.steps.first().is_some_and(|s| s.axis == Axis::Descendant);
        let instance = q.to_instance_path();
        let (cached, depth) = (self.store.cache.is_some(), opts.depth.is_some());
        if !cached && !depth && plain && (descendant || instance.as_ref().is_some_and(crate::stream::streamable)) {
            let (snap, catalog) = view.get()?;
            let yang = catalog.yang.as_deref();
            let p = match instance {
                Some(p) => Some(p),
                None => crate::rooted::rooted(&q, yang).to_instance_path().filter(crate::stream::streamable),
            };
            if let Some(p) = p {
                crate::view::check_query(yang, &q)?;
                let ds = catalog.control.read_ds(self.ds);
                let p = canonical_path(&Container::default(), &p, &*catalog.lists);
                if crate::stream::names_entries(&p, &*catalog.lists)
                    && crate::stream::write_path(snap, ds, &catalog.lists, &p, pretty, &mut out)?
                {
                    return Ok(());
                }
            }
        }
        // A query that stays inside the entries of one list, entry by entry.
        if self.scan_json(&view, &q, opts, pretty, &mut out)? {
            return Ok(());
        }
        let wopts = canopy_core::json::WriteOptions { pretty, depth: None };
        let written = self.store.with_view(&view, self.ds, self.stored, &q, |tree, _, yang| {
            let paths = q.evaluate(&tree);
            match (paths.as_slice(), &tree) {
                ([p], Cow::Borrowed(t)) if p.is_root() && opts.depth.is_none() && explicit => {
                    canopy_core::json::write_container(out, t, &wopts)
                }
                _ => canopy_core::json::write_container(out, &selection(tree, &q, opts, yang), &wopts),
            }
        })?;
        written.map_err(Error::Output)
    }

    /// The node at an instance path, if present.
    ///
    /// # Errors
    /// [`Error::Data`] for a path that does not parse; backend errors.
    pub fn get_item(&self, path: &str) -> Result<Option<Subtree>> {
        // One parse on the hot path: an entry path in the plain canonical
        // spelling (what the direct entry read serves) without building a
        // query; the instance-path parser runs again only to name the
        // position of what is not an instance identifier.
        let plain =
            Query::plain_instance(path).filter(|p| matches!(p.last().map(|s| &s.selector), Some(Selector::Keys(_))));
        let (q, p) = match plain {
            Some(p) => (None, p),
            None => {
                let q = Query::parse(path)?;
                match q.to_instance_path() {
                    Some(p) => (Some(q), p),
                    None => (Some(q), Query::parse_instance(path)?),
                }
            }
        };
        let mut q = q;
        self.store.read_briefly(|view| {
            if let Some(found) = self.store.entry_direct(view, self.ds, self.stored, &p)? {
                return Ok(found.map(Subtree::Entry));
            }
            let q = match &mut q {
                Some(q) => q,
                None => q.insert(Query::parse(path)?),
            };
            self.store
                .with_view(view, self.ds, self.stored, q, |tree, schema, yang| {
                    let p = crate::yang::check_read_path(yang, &p)?;
                    let p = canonical_path(&tree, &p, schema);
                    Ok(tree.lookup(&p).map(owned))
                })
                .and_then(|r| r)
        })
    }

    /// How many nodes `query` selects.
    ///
    /// # Errors
    /// As [`Session::get`].
    pub fn count(&self, query: &str) -> Result<usize> {
        let q = Query::parse(query)?;
        self.store.read_briefly(|view| {
            if let Some(n) = self.scan_count(view, &q)? {
                return Ok(n);
            }
            self.store.with_view(view, self.ds, self.stored, &q, |tree, _, _| q.evaluate(&tree).len())
        })
    }

    /// Sets the leaf at `path` (merging: containers and list entries on the way
    /// are created). For a leaf-list entry path (`[.='v']`) the value is ignored.
    ///
    /// # Errors
    /// [`Error::Data`] for a bad path or a value that does not fit; backend errors.
    pub fn set(&self, path: &str, value: Value) -> Result<Commit> {
        let p: Path = path.parse()?;
        let node = match p.last().map(|s| &s.selector) {
            Some(Selector::Value(v)) => Node::leaf(Value::String(v.as_str().into())),
            _ => Node::leaf(value),
        };
        self.apply(&[Edit::merge(p, node)])
    }

    /// Deletes the node at `path`.
    ///
    /// # Errors
    /// [`Error::Data`] ([`canopy_core::Error::NotFound`]) when it does not exist.
    pub fn delete(&self, path: &str) -> Result<Commit> {
        self.apply(&[Edit::delete(path.parse()?)])
    }

    /// Applies `edits` as one transaction: all of them, or on any error none.
    ///
    /// # Errors
    /// The first edit that fails (nothing is stored then); backend errors.
    pub fn apply(&self, edits: &[Edit]) -> Result<Commit> {
        match self.pushes() {
            true => self.store.push(edits.to_vec()),
            false => self.store.transact(self.ds, edits),
        }
    }

    /// Applies `edits` as one transaction if the store is still at
    /// `revision`, as read by [`Store::revision`]: for a write conditional
    /// on what was read at that revision (an HTTP `If-Match`), which must
    /// not land on a state another writer has changed since, in this
    /// process or another. Tried once. On the operational datastore's pushed
    /// state the revision is checked just before the push, not atomically
    /// with it.
    ///
    /// # Errors
    /// [`canopy_store::ErrorKind::Conflict`] when the store has moved on from
    /// `revision` (nothing is stored: read, check and try again); as
    /// [`Session::apply`].
    pub fn apply_at(&self, edits: &[Edit], revision: u64) -> Result<Commit> {
        match self.pushes() {
            // This connection's own state: no other writer changes it. The
            // revision is checked before the push, not with it: a commit of
            // another writer in between (to configuration the operational
            // view merges in) is not seen.
            true => match self.store.revision()? {
                now if now == revision => self.store.push(edits.to_vec()),
                now => Err(crate::transaction::moved(revision, now)),
            },
            false => self.store.transact_at(self.ds, edits, revision),
        }
    }

    /// Applies the edits `build` returns as one transaction, as
    /// [`Session::apply`] does, taking them by value: their values move into
    /// the transaction instead of being copied, which matters for big edits
    /// (a bulk write of thousands of list entries). When another process
    /// commits first, `build` is called again and the new edits are applied
    /// to the new state, as [`Session::apply`] retries.
    ///
    /// # Errors
    /// What `build` returns; as [`Session::apply`].
    pub fn apply_built(&self, mut build: impl FnMut() -> Result<Vec<Edit>>) -> Result<Commit> {
        match self.pushes() {
            true => self.store.push(build()?),
            false => self.store.transact_built(self.ds, build),
        }
    }

    /// Applies one edit whose value is RFC 7951 JSON text, as one transaction.
    /// `json` is written as [`canopy_core::json::parse_subtree`] takes it (the
    /// RESTCONF form: an object with the node as its only member, a whole
    /// document at `/`) and parsed with the lists the store knows; delete and
    /// remove take no value (`None`).
    ///
    /// # Errors
    /// [`Error::Data`] for a bad path, malformed JSON (with line and column) or
    /// a value that does not fit; [`Error::Usage`] for a value missing or given
    /// where the operation does not take one; as [`Session::apply`].
    pub fn edit_json(&self, op: Operation, path: &str, json: Option<&str>, insert: Option<Insert>) -> Result<Commit> {
        let edit = self.parse_edit(op, path.parse()?, json, insert)?;
        self.apply(&[edit])
    }

    /// The edit [`Session::edit_json`] applies, without applying it: for
    /// callers that gather several edits into one transaction.
    ///
    /// # Errors
    /// As [`Session::edit_json`], except those of applying.
    pub fn parse_edit(&self, op: Operation, p: Path, json: Option<&str>, insert: Option<Insert>) -> Result<Edit> {
        let value = match (op, json) {
            (Operation::Delete | Operation::Remove, None) => None,
            (Operation::Delete | Operation::Remove, Some(_)) => {
                return Err(Error::Usage(format!("{op:?} takes no value").to_lowercase()))
            }
            // A leaf-list entry needs no value: the path names it.
            (_, None) if matches!(p.last().map(|s| &s.selector), Some(Selector::Value(_))) => None,
            (_, None) => return Err(Error::Usage(format!("{op:?} needs a value").to_lowercase())),
            (_, Some(text)) => {
                // Lists the path names by key are keyed lists, known or not.
                let mut schema = (*self.store.schema_now()?).clone();
                let mut at = Path::root();
                for seg in &p.segments {
                    at = at.child(seg.name.clone(), Selector::None);
                    if let Selector::Keys(k) = &seg.selector {
                        schema
                            .lists
                            .entry(at.schema_path())
                            .or_insert_with(|| ListInfo::keyed(k.iter().map(|(n, _)| n.clone())));
                    }
                }
                let node = canopy_core::json::parse_subtree_str(text, &schema, &p)?;
                // An edit of one entry takes the entry itself (see `Edit::value`).
                Some(match (node, p.last().map(|s| &s.selector)) {
                    (Node::List(l), Some(Selector::Keys(_) | Selector::Position(_))) => {
                        Node::Container(l.entries().next().cloned().unwrap_or_default())
                    }
                    (Node::LeafList(mut v), Some(Selector::Value(_))) if v.len() == 1 => {
                        let e = v.remove(0);
                        Node::Leaf { value: e.value, meta: e.meta }
                    }
                    (node, _) => node,
                })
            }
        };
        Ok(Edit { op, path: p, value, insert })
    }

    /// Merges the JSON value `json` (an object for a container or for a list
    /// entry, which must hold its key leaves; an array for a list or leaf-list;
    /// a scalar for a leaf) at `path`, the
    /// way [`Session::set`] merges a scalar. List entries in it are keyed as
    /// the store knows their lists; lists it does not know are keyless.
    ///
    /// # Errors
    /// As [`Session::edit_json`]; line numbers in JSON errors are those of `json`.
    pub fn set_json(&self, path: &str, json: &str) -> Result<Commit> {
        let p: Path = path.parse()?;
        let Some(last) = p.last() else {
            return self.edit_json(Operation::Merge, path, Some(json), None);
        };
        // The RESTCONF form around the value, on lines of its own, so that an
        // error's line is the value's line plus one.
        let mut name = String::new();
        canopy_core::json::write_json_string(&mut name, &last.name);
        let (open, close) = match last.selector {
            Selector::Keys(_) | Selector::Position(_) => ("[", "]"),
            _ => ("", ""),
        };
        let wrapped = format!("{{{name}:{open}\n{json}\n{close}}}");
        match self.edit_json(Operation::Merge, path, Some(&wrapped), None) {
            Err(Error::Data(canopy_core::Error::Json { line, column, reason })) if line > 1 => {
                Err(Error::Data(canopy_core::Error::Json { line: line - 1, column, reason }))
            }
            other => other,
        }
    }

    /// Imports an RFC 7951 JSON document: merged into the datastore (or
    /// replacing it with `Operation::Replace`) as one transaction.
    ///
    /// Into an empty datastore, or replacing one, where nothing needs the
    /// transaction's diff (no subscriber of this process on the datastore, no
    /// change log, no YANG schema), the document streams into storage
    /// without a tree: neither it nor its fragments are held whole, and the
    /// commit lists no changes ([`Commit::streamed`] counts the fragments).
    /// Otherwise the document is parsed into a tree and committed as one
    /// edit with its diff. Both store the same data, learn the same lists
    /// and refuse the same documents.
    ///
    /// # Errors
    /// [`Error::Data`] for malformed JSON (with line and column), nothing
    /// stored; as [`Session::apply`].
    pub fn import<R: std::io::Read>(&self, mut input: R, op: Operation) -> Result<Commit> {
        let schema = self.store.schema_now()?;
        if let Some(commit) = self.import_streamed(&mut input, op, &schema)? {
            return Ok(commit);
        }
        let tree = canopy_core::json::parse_document(input, &*schema)?;
        let edit = Edit { op, path: Path::root(), value: Some(Node::Container(tree)), insert: None };
        self.apply_owned(vec![edit])
    }

    /// [`Session::import`] with list declarations (as [`Store::declare_list`]
    /// takes them) that the document's lists follow. Every declaration is
    /// checked before anything is stored; the lists the document holds are
    /// recorded in the import's own transaction, so a failed import leaves no
    /// declaration behind. Declared lists the document does not hold are
    /// recorded after the import succeeded (a list recorded keyless, with no
    /// entries left, is re-declared before it, as [`Store::declare_list`] does).
    ///
    /// # Errors
    /// [`Error::Usage`] for a declaration that conflicts with a known list
    /// (nothing is stored); as [`Session::import`].
    pub fn import_declared<R: std::io::Read>(
        &self,
        input: R,
        op: Operation,
        lists: &[(String, ListInfo)],
    ) -> Result<Commit> {
        let known = self.store.schema_now()?;
        let mut schema = (*known).clone();
        for (path, info) in lists {
            if self.store.declaration_needed(path, info)? {
                schema.lists.insert(path.clone(), info.clone());
            }
        }
        for (path, info) in lists {
            // Recorded keyless: the transaction would keep the stored record.
            if known.lists.get(path).is_some_and(|k| k.keys.is_empty() && k != info) {
                self.store.declare_list(path, info.clone())?;
            }
        }
        let mut input = input;
        let commit = match self.import_streamed(&mut input, op, &schema)? {
            Some(commit) => commit,
            None => {
                let tree = canopy_core::json::parse_document(input, &schema)?;
                let edit = Edit { op, path: Path::root(), value: Some(Node::Container(tree)), insert: None };
                self.apply_owned(vec![edit])?
            }
        };
        for (path, info) in lists {
            self.store.declare_list(path, info.clone())?;
        }
        Ok(commit)
    }

    /// Applies `edits`, taken by value, as one transaction, as
    /// [`Session::apply`] does: their values move into the transaction
    /// instead of being copied (for one edit of a big subtree, the copy
    /// costs about as much as the commit). Tried once: when another process
    /// commits first, nothing is stored and the error is a conflict
    /// ([`canopy_store::ErrorKind::Conflict`]); [`Session::apply_built`]
    /// builds the edits again and retries instead.
    ///
    /// # Errors
    /// As [`Session::apply`]; a conflict with another process's commit.
    pub fn apply_owned(&self, edits: Vec<Edit>) -> Result<Commit> {
        match self.pushes() {
            true => self.store.push(edits),
            false => self.store.transact_owned(self.ds, edits),
        }
    }
}
