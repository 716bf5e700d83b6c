//! Scalar values of leaves and leaf-list entries, and node metadata.

use std::fmt;

pub use crate::meta::Meta;

/// Text of a value: inline up to 24 bytes.
pub type Text = compact_str::CompactString;

/// The value of a leaf or leaf-list entry.
///
/// Without a schema, values are JSON scalars as RFC 7951 writes them. Numbers keep
/// the exact text they were written with (canonicalised: no leading `+`, lower-case
/// exponent), so `1.50` and `1.5` stay distinct as they are in the source document.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    /// A JSON string.
    String(Text),
    /// A JSON number, as its decimal text.
    Number(Text),
    /// `true` or `false`.
    Bool(bool),
    /// The YANG `empty` type, `[null]` in RFC 7951.
    Empty,
}

impl Value {
    /// The value borrowed.
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::String(s) => ValueRef::String(s),
            Value::Number(n) => ValueRef::Number(n),
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Empty => ValueRef::Empty,
        }
    }

    /// The text a path predicate compares with: strings as they are, numbers as
    /// written, booleans as `true`/`false`, `empty` as the empty string.
    pub fn as_text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Value::String(s) | Value::Number(s) => std::borrow::Cow::Borrowed(s),
            Value::Bool(true) => "true".into(),
            Value::Bool(false) => "false".into(),
            Value::Empty => "".into(),
        }
    }

    /// [`Value::as_text`] owned: short text (up to 24 bytes) is copied
    /// inline, without an allocation.
    pub fn text(&self) -> Text {
        match self {
            Value::String(s) | Value::Number(s) => s.clone(),
            Value::Bool(true) => Text::const_new("true"),
            Value::Bool(false) => Text::const_new("false"),
            Value::Empty => Text::const_new(""),
        }
    }

    /// Parses a value the way the CLI takes it: JSON scalar text if it is one
    /// (`5`, `true`, `"5"`, `[null]`), otherwise the text itself as a string.
    pub fn from_cli(text: &str) -> Value {
        let t = text.trim();
        if t == "[null]" {
            return Value::Empty;
        }
        match serde_json::from_str::<serde_json::Value>(t) {
            Ok(serde_json::Value::String(s)) => Value::String(s.into()),
            Ok(serde_json::Value::Bool(b)) => Value::Bool(b),
            Ok(serde_json::Value::Number(n)) => Value::Number(n.to_string().into()),
            _ => Value::String(text.into()),
        }
    }

    /// Converts a JSON scalar; `None` for objects, arrays other than `[null]`, and `null`.
    pub fn from_json(v: &serde_json::Value) -> Option<Value> {
        match v {
            serde_json::Value::String(s) => Some(Value::String(s.as_str().into())),
            serde_json::Value::Bool(b) => Some(Value::Bool(*b)),
            serde_json::Value::Number(n) => Some(Value::Number(n.to_string().into())),
            serde_json::Value::Array(a) if a.len() == 1 && a[0].is_null() => Some(Value::Empty),
            _ => None,
        }
    }

    /// The RFC 7951 JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Number(n) => serde_json::from_str(n).unwrap_or_else(|_| serde_json::Value::String(n.to_string())),
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Empty => serde_json::Value::Array(vec![serde_json::Value::Null]),
        }
    }

    /// Appends the RFC 7951 JSON text of this value to `out`.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::String(s) => crate::json::write_json_string(out, s),
            Value::Number(n) => out.push_str(n),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Empty => out.push_str("[null]"),
        }
    }
}

/// A borrowed [`Value`], as read in place from stored bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueRef<'a> {
    String(&'a str),
    Number(&'a str),
    Bool(bool),
    Empty,
}

impl<'a> ValueRef<'a> {
    /// As [`Value::as_text`].
    pub fn as_text(self) -> std::borrow::Cow<'a, str> {
        match self {
            ValueRef::String(s) | ValueRef::Number(s) => std::borrow::Cow::Borrowed(s),
            ValueRef::Bool(true) => "true".into(),
            ValueRef::Bool(false) => "false".into(),
            ValueRef::Empty => "".into(),
        }
    }

    /// The owned value.
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::String(s) => Value::String(s.into()),
            ValueRef::Number(n) => Value::Number(n.into()),
            ValueRef::Bool(b) => Value::Bool(b),
            ValueRef::Empty => Value::Empty,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_text())
    }
}
