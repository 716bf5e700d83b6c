//! Values by YANG type: which RFC 7951 JSON kind a built-in type is written
//! as, and the text libyang checks.

use canopy_core::Value;

// libyang's built-in type codes (`LY_DATA_TYPE`).
const UINT8: u32 = 2;
const UINT16: u32 = 3;
const UINT32: u32 = 4;
const BOOL: u32 = 8;
const EMPTY: u32 = 10;
const INT8: u32 = 16;
const INT16: u32 = 17;
const INT32: u32 = 18;

/// The value of canonical text `canonical` of built-in type `base`, as RFC
/// 7951 encodes it: numbers up to 32 bits as JSON numbers, 64-bit integers
/// and decimal64 as strings, booleans, `empty` as `[null]`, the rest strings.
pub(crate) fn typed(base: u32, canonical: String) -> Value {
    match base {
        UINT8 | UINT16 | UINT32 | INT8 | INT16 | INT32 => Value::Number(canonical),
        BOOL => Value::Bool(canonical == "true"),
        EMPTY => Value::Empty,
        _ => Value::String(canonical),
    }
}

/// The JSON-format text libyang checks for a value.
pub(crate) fn text(v: &Value) -> std::borrow::Cow<'_, str> {
    v.as_text()
}
