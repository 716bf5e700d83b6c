//! The members of one object as [`parse_emit`](super::parse_emit) gathers
//! them: names and scalar values in one reused byte buffer instead of a
//! [`Container`](crate::Container) with an owned string per name and value.

use std::ops::Range;

use crate::tree::{LeafListEntry, Node};
use crate::value::{Meta, ValueRef};

/// What a scalar member holds; its text (for strings and numbers) is in the
/// object's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scalar {
    String,
    Number,
    True,
    False,
    Empty,
}

#[derive(Debug)]
enum Kind {
    Scalar(Scalar, Range<u32>),
    /// Index into `others` (leaf-lists, anydata: rarer, kept as nodes).
    Other(usize),
}

#[derive(Debug)]
struct Child {
    name: Range<u32>,
    kind: Kind,
    meta: Meta,
}

/// An object being parsed in emitting mode; reused from one object to the next.
#[derive(Debug, Default)]
pub(super) struct Flat {
    pub(super) meta: Meta,
    text: String,
    children: Vec<Child>,
    others: Vec<Node>,
    /// Indexes of `children` in name order.
    sorted: Vec<u32>,
}

/// An annotation's target among an object's members.
pub(super) enum Target<'a> {
    /// A leaf or anydata: its metadata.
    Node(&'a mut Meta),
    LeafList(&'a mut Vec<LeafListEntry>),
    /// A container or list.
    Branch,
}

impl Flat {
    pub(super) fn clear(&mut self) {
        self.meta.clear();
        self.text.clear();
        self.children.clear();
        self.others.clear();
        self.sorted.clear();
    }

    fn name(&self, c: &Child) -> &str {
        &self.text[c.name.start as usize..c.name.end as usize]
    }

    /// Where `name` is (or would go) in `sorted`.
    fn find(&self, name: &str) -> Result<usize, usize> {
        // Members usually come in name order: try after the last one first.
        match self.sorted.last() {
            None => return Err(0),
            Some(&i) if self.name(&self.children[i as usize]) < name => return Err(self.sorted.len()),
            _ => {}
        }
        self.sorted.binary_search_by(|&i| self.name(&self.children[i as usize]).cmp(name))
    }

    /// The index in `children` of member `name`.
    fn index(&self, name: &str) -> Option<usize> {
        if self.children.len() <= 8 {
            // Small objects (most): a scan beats a search.
            return self.children.iter().position(|c| same(self.name(c).as_bytes(), name.as_bytes()));
        }
        Some(self.sorted[self.find(name).ok()?] as usize)
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.index(name).is_some()
    }

    fn push(&mut self, name: &str, kind: Kind) {
        let Err(at) = self.find(name) else { return };
        let start = self.text.len() as u32;
        self.text.push_str(name);
        self.sorted.insert(at, self.children.len() as u32);
        self.children.push(Child { name: start..self.text.len() as u32, kind, meta: Meta::new() });
    }

    /// Adds scalar member `name` (not present yet) holding `text`.
    pub(super) fn push_scalar(&mut self, name: &str, s: Scalar, text: &str) {
        let start = self.text.len() as u32;
        self.text.push_str(text);
        let range = start..self.text.len() as u32;
        self.push(name, Kind::Scalar(s, range));
    }

    /// Adds member `name` (not present yet) holding `node`.
    pub(super) fn push_node(&mut self, name: &str, node: Node) {
        self.others.push(node);
        self.push(name, Kind::Other(self.others.len() - 1));
    }

    /// Whether member `name` is a leaf.
    pub(super) fn is_leaf(&self, name: &str) -> bool {
        self.leaf(name).is_some()
    }

    fn leaf(&self, name: &str) -> Option<ValueRef<'_>> {
        let i = self.index(name)?;
        match &self.children[i].kind {
            Kind::Scalar(s, r) => Some(self.value(*s, r)),
            Kind::Other(o) => match &self.others[*o] {
                Node::Leaf { value, .. } => Some(value.as_ref()),
                _ => None,
            },
        }
    }

    fn value(&self, s: Scalar, r: &Range<u32>) -> ValueRef<'_> {
        let text = &self.text[r.start as usize..r.end as usize];
        match s {
            Scalar::String => ValueRef::String(text),
            Scalar::Number => ValueRef::Number(text),
            Scalar::True => ValueRef::Bool(true),
            Scalar::False => ValueRef::Bool(false),
            Scalar::Empty => ValueRef::Empty,
        }
    }

    /// Member `name`, for its annotation.
    pub(super) fn target(&mut self, name: &str) -> Option<Target<'_>> {
        let i = self.index(name)?;
        let c = &mut self.children[i];
        Some(match &c.kind {
            Kind::Scalar(..) => Target::Node(&mut c.meta),
            Kind::Other(o) => match &mut self.others[*o] {
                Node::Leaf { meta, .. } | Node::AnyData { meta, .. } => Target::Node(meta),
                Node::LeafList(entries) => Target::LeafList(entries),
                Node::Container(_) | Node::List(_) => Target::Branch,
            },
        })
    }
}

/// `a == b` for short names, without a call to `memcmp`.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A container or list entry handed to [`Emit::end`](super::Emit::end): its
/// metadata and inline children, borrowed from the parser.
#[derive(Clone, Copy)]
pub struct NodeView<'a> {
    flat: &'a Flat,
}

/// One inline child of a [`NodeView`].
pub enum ChildView<'a> {
    /// A leaf: its value and metadata.
    Leaf(ValueRef<'a>, &'a Meta),
    /// A leaf-list or anydata.
    Other(&'a Node),
}

impl<'a> NodeView<'a> {
    pub(super) fn new(flat: &'a Flat) -> NodeView<'a> {
        NodeView { flat }
    }

    /// The node's own metadata.
    pub fn meta(&self) -> &'a Meta {
        &self.flat.meta
    }

    /// The value of leaf child `name`, if the node has one.
    pub fn leaf(&self, name: &str) -> Option<ValueRef<'a>> {
        self.flat.leaf(name)
    }

    /// Number of inline children.
    pub fn len(&self) -> usize {
        self.flat.children.len()
    }

    /// Whether the node has no inline children.
    pub fn is_empty(&self) -> bool {
        self.flat.children.is_empty()
    }

    /// The inline children in name order, as a [`Container`](crate::Container)
    /// holds them.
    pub fn children(&self) -> impl Iterator<Item = (&'a str, ChildView<'a>)> + Clone + 'a {
        let flat = self.flat;
        flat.sorted.iter().map(move |&i| {
            let c = &flat.children[i as usize];
            let child = match &c.kind {
                Kind::Scalar(s, r) => ChildView::Leaf(flat.value(*s, r), &c.meta),
                Kind::Other(o) => match &flat.others[*o] {
                    Node::Leaf { value, meta } => ChildView::Leaf(value.as_ref(), meta),
                    node => ChildView::Other(node),
                },
            };
            (flat.name(c), child)
        })
    }
}
