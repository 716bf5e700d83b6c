//! Values by YANG type: which RFC 7951 JSON kind a built-in type is written
//! as, and the text libyang checks.

use canopy_core::value::Text;
use canopy_core::Value;

// libyang's built-in type codes (`LY_DATA_TYPE`).
const UINT8: u32 = 2;
const UINT16: u32 = 3;
const UINT32: u32 = 4;
const UINT64: u32 = 5;
const BOOL: u32 = 8;
const EMPTY: u32 = 10;
const INT8: u32 = 16;
const INT16: u32 = 17;
const INT32: u32 = 18;
const INT64: u32 = 19;

/// Types checked without libyang (the common, unrestricted ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fast {
    /// Check with libyang.
    None,
    /// A `string` without length or pattern: any text.
    String,
    /// A built-in integer type (libyang's code) without a range.
    Int(u32),
}

/// The bounds of a built-in integer type.
pub(crate) fn int_bounds(base: u32) -> Option<(i128, i128)> {
    Some(match base {
        INT8 => (i8::MIN.into(), i8::MAX.into()),
        INT16 => (i16::MIN.into(), i16::MAX.into()),
        INT32 => (i32::MIN.into(), i32::MAX.into()),
        INT64 => (i64::MIN.into(), i64::MAX.into()),
        UINT8 => (0, u8::MAX.into()),
        UINT16 => (0, u16::MAX.into()),
        UINT32 => (0, u32::MAX.into()),
        UINT64 => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// The fast check of `text`: `Some(Ok)` with the typed canonical value,
/// `Some(Err)` with the reason it does not fit, `None` to ask libyang.
pub(crate) fn fast_check(fast: Fast, value: &Value) -> Option<Result<Value, String>> {
    match fast {
        Fast::None => None,
        Fast::String => Some(Ok(match value {
            Value::String(s) => Value::String(s.clone()),
            other => Value::String(other.as_text().into_owned().into()),
        })),
        Fast::Int(base) => {
            let text = value.as_text();
            let digits = text.strip_prefix(['-', '+']).unwrap_or(&text);
            if digits.is_empty() || digits.len() > 30 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None; // libyang says why
            }
            let n: i128 = text.trim_start_matches('+').parse().ok()?;
            let (lo, hi) = int_bounds(base)?;
            if n < lo || n > hi {
                return None;
            }
            // Canonical text as written (no `+`, no leading zero, no `-0`) is
            // kept: short text is held inline, so nothing is allocated.
            let rewritten = text.starts_with('+') || (digits.len() > 1 && digits.starts_with('0')) || text == "-0";
            Some(Ok(typed(base, if rewritten { n.to_string().into() } else { Text::from(&*text) })))
        }
    }
}

/// The value of canonical text `canonical` of built-in type `base`, as RFC
/// 7951 encodes it: numbers up to 32 bits as JSON numbers, 64-bit integers
/// and decimal64 as strings, booleans, `empty` as `[null]`, the rest strings.
pub(crate) fn typed(base: u32, canonical: impl Into<Text>) -> Value {
    let canonical: Text = canonical.into();
    match base {
        UINT8 | UINT16 | UINT32 | INT8 | INT16 | INT32 => Value::Number(canonical),
        BOOL => Value::Bool(canonical == "true"),
        EMPTY => Value::Empty,
        _ => Value::String(canonical),
    }
}

/// The JSON kinds RFC 7951 (section 6) writes values in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonKind {
    /// `int8` to `int32`, `uint8` to `uint32`: a JSON number.
    Number,
    /// `boolean`: `true` or `false`.
    Bool,
    /// `empty`: `[null]`.
    Empty,
    /// Everything else, `int64`, `uint64` and `decimal64` included: a string.
    String,
}

impl JsonKind {
    /// The kind of built-in type `base` (libyang's code).
    pub(crate) fn of(base: u32) -> JsonKind {
        match base {
            UINT8 | UINT16 | UINT32 | INT8 | INT16 | INT32 => JsonKind::Number,
            BOOL => JsonKind::Bool,
            EMPTY => JsonKind::Empty,
            _ => JsonKind::String,
        }
    }

    /// The kind `value` is written in.
    pub(crate) fn of_value(value: &Value) -> JsonKind {
        match value {
            Value::Number(_) => JsonKind::Number,
            Value::Bool(_) => JsonKind::Bool,
            Value::Empty => JsonKind::Empty,
            Value::String(_) => JsonKind::String,
        }
    }

    /// How the kind is named in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            JsonKind::Number => "a JSON number",
            JsonKind::Bool => "a JSON boolean",
            JsonKind::Empty => "[null]",
            JsonKind::String => "a JSON string",
        }
    }
}

/// The JSON-format text libyang checks for a value.
pub(crate) fn text(v: &Value) -> std::borrow::Cow<'_, str> {
    v.as_text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrestricted_integers_are_checked_and_canonical() {
        let n = |s: &str| Value::Number(s.into());
        assert_eq!(fast_check(Fast::Int(UINT32), &n("007")), Some(Ok(n("7"))));
        assert_eq!(fast_check(Fast::Int(INT8), &Value::String("-128".into())), Some(Ok(n("-128"))));
        assert_eq!(fast_check(Fast::Int(INT64), &n("+5")), Some(Ok(Value::String("5".into()))));
        // Text that is canonical already is kept as written; any other is rewritten.
        for (text, canonical) in
            [("0", "0"), ("-0", "0"), ("+0", "0"), ("00", "0"), ("-0012", "-12"), ("-12", "-12"), ("120", "120")]
        {
            assert_eq!(fast_check(Fast::Int(INT32), &n(text)), Some(Ok(n(canonical))), "{text}");
        }
        // Out of range or not an integer: libyang gives the reason.
        assert_eq!(fast_check(Fast::Int(INT8), &n("128")), None);
        assert_eq!(fast_check(Fast::Int(UINT8), &n("-1")), None);
        assert_eq!(fast_check(Fast::Int(UINT32), &n("1.5")), None);
        assert_eq!(fast_check(Fast::Int(UINT32), &Value::String("".into())), None);
        assert_eq!(fast_check(Fast::None, &n("1")), None);
    }

    #[test]
    fn unrestricted_strings_take_any_text() {
        assert_eq!(fast_check(Fast::String, &Value::Number("5".into())), Some(Ok(Value::String("5".into()))));
        assert_eq!(fast_check(Fast::String, &Value::Bool(true)), Some(Ok(Value::String("true".into()))));
    }
}
