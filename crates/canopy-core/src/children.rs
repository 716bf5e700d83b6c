//! [`Children`]: the children of a container, by name, in name order.
//!
//! A sorted vector rather than a `BTreeMap`: containers have few children and
//! are built in name order (from storage, from sorted JSON), so lookups are a
//! binary search, appends are O(1), and a container costs one allocation of
//! exactly its children instead of a B-tree node of eleven. The methods mirror
//! `BTreeMap`'s so code reads the same.

use std::fmt;

use crate::tree::{Name, Node};

/// Children of a container, sorted by name, names unique.
#[derive(Clone, Default, PartialEq)]
pub struct Children {
    items: Vec<(Name, Node)>,
}

impl fmt::Debug for Children {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.items.iter().map(|(k, v)| (k, v))).finish()
    }
}

impl Children {
    pub fn new() -> Children {
        Children::default()
    }

    /// Room for `n` children without growing.
    pub fn with_capacity(n: usize) -> Children {
        Children { items: Vec::with_capacity(n) }
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        // Appending in order is the common case: check the end first.
        match self.items.last() {
            Some((last, _)) if last.as_str() < name => Err(self.items.len()),
            _ => self.items.binary_search_by(|(k, _)| k.as_str().cmp(name)),
        }
    }

    /// The index of the child `name`. Containers mostly have few children:
    /// up to eight are scanned comparing lengths before bytes, which is
    /// cheaper than a binary search's ordered comparisons.
    fn position(&self, name: &str) -> Option<usize> {
        if self.items.len() <= 8 {
            let n = name.as_bytes();
            return self.items.iter().position(|(k, _)| {
                let k = k.as_bytes();
                k.len() == n.len() && k.first() == n.first() && k == n
            });
        }
        self.find(name).ok()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Node> {
        self.position(name).map(|i| &self.items[i].1)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Node> {
        self.position(name).map(move |i| &mut self.items[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Inserts or replaces; returns the node that was there.
    pub fn insert(&mut self, name: Name, node: Node) -> Option<Node> {
        // Children decoded or copied arrive in name order: the end is tried first.
        if self.items.last().is_none_or(|(last, _)| last.as_str() < name.as_str()) {
            self.items.push((name, node));
            return None;
        }
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.items[i].1, node)),
            Err(i) => {
                self.items.insert(i, (name, node));
                None
            }
        }
    }

    /// Moves `other`'s children in: in one move when they all come after
    /// this map's (two halves of one sorted sequence), else one by one.
    ///
    /// # Errors
    /// The first name both hold (this map keeps its own node; the children of
    /// `other` after it are not moved).
    pub fn append(&mut self, other: Children) -> Result<(), Name> {
        let after = match (self.items.last(), other.items.first()) {
            (Some((last, _)), Some((first, _))) => last.as_str() < first.as_str(),
            _ => true,
        };
        if after {
            self.items.extend(other.items);
            return Ok(());
        }
        for (name, node) in other.items {
            match self.find(&name) {
                Ok(_) => return Err(name),
                Err(i) => self.items.insert(i, (name, node)),
            }
        }
        Ok(())
    }

    pub fn remove(&mut self, name: &str) -> Option<Node> {
        self.position(name).map(|i| self.items.remove(i).1)
    }

    /// The slot for `name`, to fill if empty.
    pub fn entry(&mut self, name: Name) -> Entry<'_> {
        match self.find(&name) {
            Ok(i) => Entry { children: self, index: Ok(i), name },
            Err(i) => Entry { children: self, index: Err(i), name },
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&Name, &Node)> + ExactSizeIterator + Clone {
        self.items.iter().map(|(k, v)| (k, v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Name, &mut Node)> {
        self.items.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Name> + ExactSizeIterator {
        self.items.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Node> + ExactSizeIterator {
        self.items.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.items.iter_mut().map(|(_, v)| v)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&Name, &mut Node) -> bool) {
        self.items.retain_mut(|(k, v)| keep(k, v));
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// A slot of [`Children::entry`].
pub struct Entry<'a> {
    children: &'a mut Children,
    index: Result<usize, usize>,
    name: Name,
}

impl<'a> Entry<'a> {
    pub fn or_insert_with(self, make: impl FnOnce() -> Node) -> &'a mut Node {
        let i = match self.index {
            Ok(i) => i,
            Err(i) => {
                self.children.items.insert(i, (self.name, make()));
                i
            }
        };
        &mut self.children.items[i].1
    }

    pub fn or_insert(self, node: Node) -> &'a mut Node {
        self.or_insert_with(|| node)
    }
}

impl std::ops::Index<&str> for Children {
    type Output = Node;
    /// The child `name`; panics when absent, like `BTreeMap`'s index.
    fn index(&self, name: &str) -> &Node {
        self.get(name).unwrap_or_else(|| panic!("no child `{name}`"))
    }
}

impl Extend<(Name, Node)> for Children {
    fn extend<T: IntoIterator<Item = (Name, Node)>>(&mut self, iter: T) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl FromIterator<(Name, Node)> for Children {
    fn from_iter<T: IntoIterator<Item = (Name, Node)>>(iter: T) -> Children {
        let mut c = Children::new();
        c.extend(iter);
        c
    }
}

impl<const N: usize> From<[(Name, Node); N]> for Children {
    fn from(items: [(Name, Node); N]) -> Children {
        items.into_iter().collect()
    }
}

impl IntoIterator for Children {
    type Item = (Name, Node);
    type IntoIter = std::vec::IntoIter<(Name, Node)>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = (&'a Name, &'a Node);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (Name, Node)>, fn(&'a (Name, Node)) -> (&'a Name, &'a Node)>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    #[test]
    fn behaves_like_a_sorted_map() {
        let mut c = Children::new();
        for n in ["m", "a", "z", "b"] {
            assert!(c.insert(n.into(), Node::leaf(Value::String(n.into()))).is_none());
        }
        assert_eq!(c.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["a", "b", "m", "z"]);
        assert!(c.insert("b".into(), Node::leaf(Value::Bool(true))).is_some());
        assert_eq!(c.len(), 4);
        assert!(matches!(c.get("b"), Some(Node::Leaf { value: Value::Bool(true), .. })));
        assert!(c.remove("m").is_some() && !c.contains_key("m"));
        c.entry("c".into()).or_insert_with(|| Node::leaf(Value::Empty));
        c.entry("c".into()).or_insert_with(|| panic!("present"));
        assert_eq!(c.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "z"]);
        c.retain(|k, _| k != "a");
        assert_eq!(c.iter().count(), 3);
    }

    #[test]
    fn appends_halves_and_interleaved_maps() {
        let map =
            |names: &[&str]| -> Children { names.iter().map(|n| ((*n).into(), Node::leaf(Value::Empty))).collect() };
        let names = |c: &Children| c.keys().map(|k| k.to_string()).collect::<Vec<_>>();
        let mut a = map(&["a", "b"]);
        a.append(map(&["c", "d"])).unwrap();
        assert_eq!(names(&a), ["a", "b", "c", "d"]);
        a.append(map(&["bb", "e"])).unwrap();
        assert_eq!(names(&a), ["a", "b", "bb", "c", "d", "e"]);
        assert_eq!(a.append(map(&["0", "c"])).unwrap_err().as_str(), "c");
        let mut empty = Children::new();
        empty.append(map(&["x"])).unwrap();
        assert_eq!(names(&empty), ["x"]);
    }

    #[test]
    fn finds_by_scan_and_by_search_alike() {
        // Up to eight children are scanned, more are searched: both must find
        // every name, miss names that share a length or a first byte, and
        // keep the order.
        for n in [1usize, 3, 8, 9, 40] {
            let mut c = Children::new();
            for i in (0..n).rev() {
                c.insert(format!("n{i:02}").into(), Node::leaf(Value::String(i.to_string().into())));
            }
            for i in 0..n {
                let name = format!("n{i:02}");
                assert!(
                    matches!(c.get(&name), Some(Node::Leaf { value: Value::String(v), .. }) if *v == *i.to_string())
                );
                assert!(c.contains_key(&name));
            }
            for missing in ["n", "n99", "m00", "n0", "n000", ""] {
                assert!(c.get(missing).is_none(), "{n} children: `{missing}` found");
            }
            let last = format!("n{:02}", n - 1);
            assert!(c.remove(&last).is_some() && c.get(&last).is_none() && c.len() == n - 1);
            let names: Vec<String> = c.keys().map(|k| k.to_string()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted);
        }
    }
}
