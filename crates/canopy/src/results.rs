//! Writing the per-entry results of a query read entry by entry
//! (scan.rs) as one RFC 7951 document.

use std::io::Write;

use canopy_core::json::{write_members, JsonWriter};
use canopy_core::path::query::EntryScan;
use canopy_core::tree::{Container, Node};
use canopy_core::Schema;

use crate::error::{Error, Result};

/// One list entry's stored fragments as the scan met them (the entry's own
/// first): keys relative to the datastore and values, in one buffer.
#[derive(Default)]
pub struct EntryFragments {
    buf: Vec<u8>,
    /// Per fragment: where its key starts, where its value starts and ends.
    spans: Vec<(usize, usize, usize)>,
}

impl EntryFragments {
    pub(crate) fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(crate) fn push(&mut self, rel: &[u8], v: &[u8]) {
        let a = self.buf.len();
        self.buf.extend_from_slice(rel);
        let b = self.buf.len();
        self.buf.extend_from_slice(v);
        self.spans.push((a, b, self.buf.len()));
    }

    /// The fragments, each as its key relative to the datastore and its
    /// stored bytes, in the order the scan met them.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.spans.iter().map(|&(a, b, c)| (&self.buf[a..b], &self.buf[b..c]))
    }
}

/// Writes the per-entry results of a scan (trees holding one entry of the
/// list below the same ancestors) as one RFC 7951 document, the one the
/// results merged into one tree give: the ancestors are opened at the
/// first result, each result's entry is written as it comes, and `{}` is
/// written when nothing was selected.
pub(crate) struct ResultWriter<W: Write> {
    /// Taken out only while [`entry_fragments`](Self::entry_fragments) writes.
    w: Option<JsonWriter<W>>,
    scan: EntryScan,
    /// Per open ancestor level: the members after the path's child, written
    /// when it closes, and whether the level is an entry (two closes).
    pending: Vec<(Container, bool)>,
    open: bool,
}

impl<W: Write> ResultWriter<W> {
    pub fn new(out: W, pretty: bool, scan: EntryScan) -> Self {
        ResultWriter { w: Some(JsonWriter::new(out, pretty)), scan, pending: Vec::new(), open: false }
    }

    /// Writes one entry's result `r` (the entry, with its ancestors) from
    /// the entry's fragments `frags` (what [`result`](Self::result) writes
    /// from the whole entry): `list_rel` and `list_sp` are the scanned
    /// list's relative key and schema path.
    ///
    /// # Errors
    /// Write errors; `Corrupted` for a damaged fragment.
    pub fn entry_fragments(
        &mut self,
        r: &Container,
        frags: &EntryFragments,
        list_rel: &[u8],
        list_sp: &str,
        schema: &dyn Schema,
    ) -> Result<()> {
        if !self.open {
            self.open_ancestors(r).map_err(Error::Output)?;
            self.open = true;
        }
        let w = self.w.take().expect("the writer is back after each entry");
        let mut s = canopy_store::stream::JsonStream::in_list(w, list_rel, list_sp, schema);
        for (rel, v) in frags.iter() {
            s.fragment(rel, v)?;
        }
        self.w = Some(s.into_writer()?);
        Ok(())
    }

    /// Writes one entry's result.
    ///
    /// # Errors
    /// Write errors.
    pub fn result(&mut self, r: &Container) -> std::io::Result<()> {
        if r.children.is_empty() && r.meta.is_empty() {
            return Ok(());
        }
        if !self.open {
            self.open_ancestors(r)?;
            self.open = true;
        }
        let w = self.w.as_mut().expect("the writer is back after each entry");
        let mut c = r;
        for seg in &self.scan.parent.segments {
            c = match c.children.get(&seg.name) {
                Some(Node::Container(cc)) => cc,
                Some(Node::List(l)) => l.entries().next().expect("one entry per ancestor list"),
                _ => return Ok(()),
            };
        }
        if let Some(Node::List(l)) = c.children.get(&self.scan.list) {
            for e in l.entries() {
                w.begin_entry()?;
                write_members(w, e, None)?;
                w.end()?;
            }
        }
        Ok(())
    }

    /// Opens the ancestors and the list as `r` (the first result) has them:
    /// the members before the path's child are written now, the rest kept.
    fn open_ancestors(&mut self, r: &Container) -> std::io::Result<()> {
        let w = self.w.as_mut().expect("the writer is back after each entry");
        w.meta(&r.meta)?;
        let mut c = r;
        let names = self.scan.parent.segments.iter().map(|s| s.name.as_str()).chain([self.scan.list.as_str()]);
        for name in names {
            let (mut before, mut after) = (Container::default(), Container::default());
            for (n, node) in &c.children {
                match n.as_str().cmp(name) {
                    std::cmp::Ordering::Less => before.children.insert(n.clone(), node.clone()),
                    std::cmp::Ordering::Greater => after.children.insert(n.clone(), node.clone()),
                    std::cmp::Ordering::Equal => None,
                };
            }
            write_members(w, &before, None)?;
            match c.children.get(name) {
                Some(Node::Container(cc)) => {
                    w.begin_container(name)?;
                    w.meta(&cc.meta)?;
                    self.pending.push((after, false));
                    c = cc;
                }
                Some(Node::List(l)) if name == self.scan.list => {
                    w.begin_list(name)?;
                    self.pending.push((after, false));
                    let _ = l;
                }
                Some(Node::List(l)) => {
                    let e = l.entries().next().expect("one entry per ancestor list");
                    w.begin_list(name)?;
                    w.begin_entry()?;
                    w.meta(&e.meta)?;
                    self.pending.push((after, true));
                    c = e;
                }
                _ => return Err(std::io::Error::other("a result without its ancestors")),
            }
        }
        Ok(())
    }

    /// Closes what is open and finishes the document.
    ///
    /// # Errors
    /// Write errors.
    pub fn finish(mut self) -> std::io::Result<W> {
        // The list's level first: its `after` members belong to its parent.
        let mut levels = std::mem::take(&mut self.pending);
        let mut w = self.w.take().expect("the writer is back after each entry");
        while let Some((after, entry)) = levels.pop() {
            w.end()?;
            if entry {
                w.end()?;
            }
            write_members(&mut w, &after, None)?;
        }
        w.finish()
    }
}
