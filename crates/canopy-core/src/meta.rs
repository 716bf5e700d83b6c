//! Metadata of one node: annotation name (`module:name`) → value, in name
//! order (so printing and encoding are deterministic).
//!
//! A node rarely has more than a few annotations, and a store may hold
//! millions of annotated leaves (Elektra-style key sets: four metakeys on
//! every key), so the map is a sorted vector of short strings: no tree node
//! per map, and names and values of up to 24 bytes stored inline, without an
//! allocation of their own. Reading, cloning and freeing such a leaf costs a
//! handful of allocations instead of a dozen.

use std::fmt;

use crate::tree::Name;

/// A metadata value: text, inline up to 24 bytes.
pub type MetaValue = compact_str::CompactString;

/// Metadata of one node: annotation name → value, in name order.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Meta {
    entries: Vec<(Name, MetaValue)>,
}

impl Meta {
    /// No annotations.
    pub const fn new() -> Meta {
        Meta { entries: Vec::new() }
    }

    /// No annotations, room for `n`.
    pub fn with_capacity(n: usize) -> Meta {
        Meta { entries: Vec::with_capacity(n) }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }

    /// The value of annotation `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.find(name).ok().map(|i| self.entries[i].1.as_str())
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets annotation `name` to `value`, returning the value it replaced.
    pub fn insert(&mut self, name: impl Into<Name> + AsRef<str>, value: impl Into<MetaValue>) -> Option<MetaValue> {
        // Annotations mostly arrive in name order (decoding, copying): the
        // end is tried first.
        let at = match self.entries.last() {
            Some((last, _)) if last.as_str() >= name.as_ref() => self.find(name.as_ref()),
            _ => Err(self.entries.len()),
        };
        match at {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value.into())),
            Err(i) => {
                self.entries.insert(i, (name.into(), value.into()));
                None
            }
        }
    }

    /// Sets annotation `name` to `value()` unless it is set already.
    pub fn insert_if_absent(&mut self, name: &str, value: impl FnOnce() -> MetaValue) {
        if let Err(i) = self.find(name) {
            self.entries.insert(i, (name.into(), value()));
        }
    }

    /// Removes annotation `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<MetaValue> {
        self.find(name).ok().map(|i| self.entries.remove(i).1)
    }

    /// Keeps the annotations `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        self.entries.retain(|(k, v)| keep(k, v));
    }

    /// `(name, value)` in name order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries.iter())
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        self.entries.iter().map(|(_, v)| v.as_str())
    }
}

/// The annotations of a [`Meta`] in name order.
#[derive(Clone)]
pub struct Iter<'a>(std::slice::Iter<'a, (Name, MetaValue)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        self.0.next().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Meta {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Meta {
    type Item = (Name, MetaValue);
    type IntoIter = std::vec::IntoIter<(Name, MetaValue)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Into<Name> + AsRef<str>, V: Into<MetaValue>> Extend<(K, V)> for Meta {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Into<Name> + AsRef<str>, V: Into<MetaValue>> FromIterator<(K, V)> for Meta {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Meta {
        let mut m = Meta::new();
        m.extend(iter);
        m
    }
}

impl<K: Into<Name> + AsRef<str>, V: Into<MetaValue>, const N: usize> From<[(K, V); N]> for Meta {
    fn from(pairs: [(K, V); N]) -> Meta {
        pairs.into_iter().collect()
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_names_in_order_and_one_value_each() {
        let mut m = Meta::new();
        assert_eq!(m.insert("b:y", "2"), None);
        assert_eq!(m.insert("a:x", "1"), None);
        assert_eq!(m.insert("c:z", "3"), None);
        assert_eq!(m.insert("b:y", "two").as_deref(), Some("2"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a:x", "b:y", "c:z"]);
        assert_eq!(m.get("b:y"), Some("two"));
        assert_eq!(m.get("b"), None);
        assert_eq!(m.remove("a:x").as_deref(), Some("1"));
        assert!(!m.contains_key("a:x") && m.len() == 2);
        m.insert_if_absent("c:z", || panic!("set already"));
        m.insert_if_absent("a:w", || "0".into());
        assert_eq!(m.iter().collect::<Vec<_>>(), [("a:w", "0"), ("b:y", "two"), ("c:z", "3")]);
        m.retain(|k, _| k != "b:y");
        assert_eq!(format!("{m:?}"), r#"{"a:w": "0", "c:z": "3"}"#);
        let long = "a value longer than twenty-four bytes, kept on the heap";
        let built: Meta = [("z", long), ("m", "short")].into();
        assert_eq!(built.values().collect::<Vec<_>>(), ["short", long]);
        assert_eq!(built, Meta::from_iter([("m", "short"), ("z", long)]));
    }
}
