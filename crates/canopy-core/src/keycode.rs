//! Order-preserving byte encodings shared by the in-memory tree and storage.
//!
//! * An **entry key** encodes the key values of a system-ordered list entry so
//!   that byte order is the entries' document order. Each key value is tagged:
//!   values that are canonical decimal integers in the `i64` range (`0`, `-12`,
//!   not `007`) sort numerically before all other values, which sort bytewise.
//!   So `k='9'` comes before `k='10'`, as a user reading the list expects.
//! * An **order key** places a user-ordered entry: a byte string (no `0x00`
//!   byte) that sorts between its neighbours' (fractional indexing), so inserting
//!   or moving an entry never renumbers its siblings. Appending and prepending
//!   keep keys short (an integer part that is counted up or down); inserting
//!   between two neighbours extends the fraction by about one byte per 8 nested
//!   inserts at the same place.
//!
//! Both encodings end in a way that keeps the prefix property: no encoded entry
//! is a prefix of a different entry's encoding followed by more path, so a
//! subtree is always one contiguous key range.

/// Tag of a key value that is a canonical `i64`.
const TAG_INT: u8 = 0x10;
/// Tag of any other key value.
const TAG_STR: u8 = 0x20;

/// Appends `s` with `0x00` escaped as `0x00 0xFF`, then the terminator `0x00 0x01`.
pub fn push_escaped(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    // Names and key values hold no NUL but in rare cases: one scan (a
    // `memchr`) and one copy.
    if !s.contains(&0) {
        out.extend_from_slice(s);
        out.extend_from_slice(&[0, 1]);
        return;
    }
    let mut rest = s;
    while let Some(i) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..=i]);
        out.push(0xFF);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0, 1]);
}

/// Reads an escaped string starting at `*pos`, advancing past its terminator.
/// `None` when the input ends first or holds an invalid escape.
pub fn read_escaped(input: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = *pos;
    loop {
        let b = *input.get(i)?;
        if b == 0 {
            match *input.get(i + 1)? {
                0xFF => out.push(0),
                1 => {
                    *pos = i + 2;
                    return Some(out);
                }
                _ => return None,
            }
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
}

/// Parses `s` as a canonical decimal `i64` (no sign on zero, no leading zeros,
/// no `+`).
pub fn canonical_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() > 1 && digits.starts_with('0') {
        return None;
    }
    if s == "-0" {
        return None;
    }
    s.parse().ok()
}

/// Appends the encoding of one key value.
pub fn push_key_value(out: &mut Vec<u8>, v: &str) {
    match canonical_int(v) {
        Some(n) => {
            out.push(TAG_INT);
            out.extend_from_slice(&((n as u64) ^ (1 << 63)).to_be_bytes());
        }
        None => {
            out.push(TAG_STR);
            push_escaped(out, v.as_bytes());
        }
    }
}

/// Whether the encoding of key value `v` ([`push_key_value`]) stands in
/// `input` at `*pos`; if so, `*pos` moves past it. Compares without encoding
/// `v` into a buffer of its own.
pub fn eat_key_value(input: &[u8], pos: &mut usize, v: &str) -> bool {
    let rest = &input[(*pos).min(input.len())..];
    let used = match canonical_int(v) {
        Some(n) => match rest.split_first() {
            Some((&TAG_INT, b)) if b.get(..8) == Some(&((n as u64) ^ (1 << 63)).to_be_bytes()[..]) => 9,
            _ => return false,
        },
        None => {
            let Some((&TAG_STR, mut b)) = rest.split_first() else { return false };
            let mut used = 1;
            for &c in v.as_bytes() {
                let want: &[u8] = if c == 0 { &[0, 0xFF] } else { std::slice::from_ref(&c) };
                let Some(tail) = b.strip_prefix(want) else { return false };
                b = tail;
                used += want.len();
            }
            if !b.starts_with(&[0, 1]) {
                return false;
            }
            used + 2
        }
    };
    *pos += used;
    true
}

/// Reads one key value written by [`push_key_value`].
pub fn read_key_value(input: &[u8], pos: &mut usize) -> Option<String> {
    match *input.get(*pos)? {
        TAG_INT => {
            let bytes: [u8; 8] = input.get(*pos + 1..*pos + 9)?.try_into().ok()?;
            *pos += 9;
            Some(((u64::from_be_bytes(bytes) ^ (1 << 63)) as i64).to_string())
        }
        TAG_STR => {
            *pos += 1;
            String::from_utf8(read_escaped(input, pos)?).ok()
        }
        _ => None,
    }
}

/// Where the escaped string starting at `start` ends (the index of its end
/// mark) when it holds no escaped NUL, which is the common case: its bytes
/// are then `input[start..end]` as they are. `None` otherwise, or when the
/// input ends first.
pub fn plain_escaped(input: &[u8], start: usize) -> Option<usize> {
    let i = start + input.get(start..)?.iter().position(|&b| b == 0)?;
    (input.get(i + 1) == Some(&1)).then_some(i)
}

/// Moves `*pos` past an escaped string, as [`read_escaped`] does, without
/// decoding it. `None` where [`read_escaped`] gives `None`.
pub fn skip_escaped(input: &[u8], pos: &mut usize) -> Option<()> {
    match plain_escaped(input, *pos) {
        Some(end) => {
            *pos = end + 2;
            Some(())
        }
        None => read_escaped(input, pos).map(drop),
    }
}

/// Moves `*pos` past a key value, as [`read_key_value`] does, without
/// decoding it. `None` where [`read_key_value`] gives `None`.
pub fn skip_key_value(input: &[u8], pos: &mut usize) -> Option<()> {
    match *input.get(*pos)? {
        TAG_INT => {
            input.get(*pos + 1..*pos + 9)?;
            *pos += 9;
            Some(())
        }
        TAG_STR => match plain_escaped(input, *pos + 1) {
            Some(end) => {
                std::str::from_utf8(&input[*pos + 1..end]).ok()?;
                *pos = end + 2;
                Some(())
            }
            None => read_key_value(input, pos).map(drop),
        },
        _ => None,
    }
}

/// The entry key of a system-ordered list entry with these key values.
pub fn entry_key<S: AsRef<str>>(values: &[S]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.iter().map(|v| (v.as_ref().len() + 3).max(9)).sum());
    for v in values {
        push_key_value(&mut out, v.as_ref());
    }
    out
}

/// Decodes an entry key of `n` values.
pub fn decode_entry_key(input: &[u8], n: usize) -> Option<Vec<String>> {
    let mut pos = 0;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(read_key_value(input, &mut pos)?);
    }
    (pos == input.len()).then_some(out)
}

/// Number of digits of the integer part of a fresh order key.
const START_DIGITS: u8 = 3;
/// Head byte of an integer part with `n` digits: longer integers sort later.
const fn head(n: u8) -> u8 {
    0x80 + n
}

/// The order key of the first entry of an empty list.
pub fn order_first() -> Vec<u8> {
    vec![head(START_DIGITS), 0x80, 0x01, 0x01]
}

/// Splits an order key into its integer part (head and digits) and fraction.
fn split_order(k: &[u8]) -> (&[u8], &[u8]) {
    match k.first() {
        Some(&h) if h > 0x80 && k.len() > (h - 0x80) as usize => k.split_at(1 + (h - 0x80) as usize),
        _ => (&[], k),
    }
}

/// Increments (`up`) or decrements the integer part `int` (head + base-255
/// digits 1..=255). `None` when it would leave the range of its digit count and
/// no shorter/longer form exists.
fn step_int(int: &[u8], up: bool) -> Option<Vec<u8>> {
    let mut digits = int[1..].to_vec();
    let mut i = digits.len();
    loop {
        if i == 0 {
            // Overflow/underflow of every digit: change the digit count.
            let n = digits.len() as u8;
            return if up {
                (n < 0x7E).then(|| {
                    let mut v = vec![head(n + 1), 0x02];
                    v.extend(std::iter::repeat_n(0x01, n as usize));
                    v
                })
            } else {
                (n > 1).then(|| {
                    let mut v = vec![head(n - 1)];
                    v.extend(std::iter::repeat_n(0xFF, (n - 1) as usize));
                    v
                })
            };
        }
        i -= 1;
        if up {
            if digits[i] < 0xFF {
                digits[i] += 1;
                break;
            }
            digits[i] = 0x01;
        } else {
            if digits[i] > 0x01 {
                digits[i] -= 1;
                break;
            }
            digits[i] = 0xFF;
        }
    }
    let mut v = Vec::with_capacity(1 + digits.len());
    v.push(int[0]);
    v.extend(digits);
    Some(v)
}

/// Whether `k` is an order key as [`order_between`] makes them: not empty, no
/// `0x00` byte (it ends the key in storage), and not ending in `0x01` unless
/// the whole key is an integer part (a fraction ending in `0x01` leaves no
/// room below it). Readers check stored order keys with this before using them.
pub fn is_order_key(k: &[u8]) -> bool {
    match k.last() {
        None => false,
        Some(_) if k.contains(&0) => false,
        Some(1) => split_order(k).1.is_empty(),
        Some(_) => true,
    }
}

/// A byte string strictly between `a` and `b` (either may be unbounded), made
/// of bytes 0x01..=0xFF. `None` when nothing fits (inputs that are not order
/// keys with `a < b`): the walk is bounded by the inputs' length, never endless.
fn frac_between(a: &[u8], b: Option<&[u8]>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut a_live = true;
    let mut b_live = b.is_some();
    let bb = b.unwrap_or(&[]);
    // Well-formed inputs end the walk within one digit past both (once both
    // bounds are behind, the next digit is free).
    let limit = a.len().max(bb.len()) + 2;
    let mut i = 0;
    let found = loop {
        if i > limit {
            return None;
        }
        let da = if a_live { a.get(i).copied().unwrap_or(0) as u32 } else { 0 };
        let db = if b_live { bb.get(i).copied().map_or(0, u32::from) } else { 256 };
        if db > da + 1 {
            let mid = (da + db) / 2;
            if mid > 1 {
                out.push(mid as u8);
                break out;
            }
            // Never end a key in 0x01: nothing would fit below it. Take 0x01
            // as a non-final digit; above it the next digit is free.
            out.push(1);
            b_live = false;
            a_live = false;
            i += 1;
            continue;
        }
        if da == db {
            out.push(da as u8);
        } else if da >= 1 {
            // db == da + 1: follow `a`; everything above it at this digit is free.
            out.push(da as u8);
            b_live = false;
        } else {
            // da == 0 (a ended), db == 1: follow `b`.
            out.push(1);
            a_live = false;
        }
        if a_live && i + 1 >= a.len() {
            a_live = i + 1 < a.len();
        }
        i += 1;
    };
    let fits = found.as_slice() > a && b.is_none_or(|b| found.as_slice() < b) && is_order_key(&found);
    fits.then_some(found)
}

/// An order key after `a` (and before `b`, when given).
///
/// `None` when `a` or `b` is not an order key ([`is_order_key`]) or `a >= b`:
/// damaged stored keys give an error to report, never a loop.
pub fn order_between(a: Option<&[u8]>, b: Option<&[u8]>) -> Option<Vec<u8>> {
    if a.is_some_and(|a| !is_order_key(a)) || b.is_some_and(|b| !is_order_key(b)) {
        return None;
    }
    if let (Some(a), Some(b)) = (a, b) {
        if a >= b {
            return None;
        }
    }
    match (a, b) {
        (None, None) => Some(order_first()),
        (Some(a), None) => {
            let (ia, _) = split_order(a);
            if !ia.is_empty() {
                if let Some(n) = step_int(ia, true) {
                    return Some(n);
                }
            }
            frac_between(a, None)
        }
        (None, Some(b)) => {
            let (ib, fb) = split_order(b);
            if !ib.is_empty() {
                if fb.is_empty() {
                    if let Some(n) = step_int(ib, false) {
                        return Some(n);
                    }
                } else {
                    return Some(ib.to_vec());
                }
            }
            frac_between(&[], Some(b))
        }
        (Some(a), Some(b)) => {
            let (ia, _) = split_order(a);
            if !ia.is_empty() {
                if let Some(n) = step_int(ia, true) {
                    if n.as_slice() < b {
                        return Some(n);
                    }
                }
            }
            frac_between(a, Some(b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skipping a string or key value moves as far as reading it does, and
    /// fails where reading fails: escaped NULs, invalid UTF-8, cut input.
    #[test]
    fn skipping_moves_as_reading_does() {
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for v in ["", "a", "x\0y", "é", "12", "-5", "007"] {
            let mut e = Vec::new();
            push_escaped(&mut e, v.as_bytes());
            e.push(9);
            inputs.push(e);
            let mut k = Vec::new();
            push_key_value(&mut k, v);
            k.push(9);
            inputs.push(k);
        }
        inputs.push(vec![b'a', 0, 0xFF, b'b', 0, 1]);
        inputs.push(vec![TAG_STR, b'a', 0, 0xFF, 0, 1]);
        inputs.push(vec![TAG_STR, 0xC3, 0, 1]);
        inputs.push(vec![TAG_STR, b'a', 0, 2]);
        inputs.push(vec![TAG_INT, 1, 2]);
        inputs.push(vec![b'a', 0]);
        for input in &inputs {
            for start in 0..input.len() {
                let (mut a, mut b) = (start, start);
                assert_eq!(skip_escaped(input, &mut a), read_escaped(input, &mut b).map(drop), "{input:?} at {start}");
                assert_eq!(a, b, "{input:?} at {start}");
                // Where reading fails, where it leaves `pos` is no promise.
                let (mut a, mut b) = (start, start);
                let read = read_key_value(input, &mut b).map(drop);
                assert_eq!(skip_key_value(input, &mut a), read, "{input:?} at {start}");
                if read.is_some() {
                    assert_eq!(a, b, "{input:?} at {start}");
                }
            }
        }
    }

    /// A value is found where its own encoding stands and nowhere else: not
    /// in another value's, not in a cut one, not across a missing terminator.
    #[test]
    fn eating_a_key_value_matches_its_encoding_only() {
        let values = ["", "a", "ab", "x\0y", "\0", "é", "0", "12", "-5", "007", "9223372036854775807", "str12"];
        for v in values {
            let mut k = Vec::new();
            push_key_value(&mut k, v);
            let mut pos = 0;
            assert!(eat_key_value(&k, &mut pos, v), "{v:?}");
            assert_eq!(pos, k.len(), "{v:?}");
            // Two values in a row, as an entry key of two keys holds them.
            let mut two = k.clone();
            push_key_value(&mut two, "b");
            let mut pos = 0;
            assert!(eat_key_value(&two, &mut pos, v) && eat_key_value(&two, &mut pos, "b"), "{v:?}");
            assert_eq!(pos, two.len());
            for w in values.iter().filter(|w| **w != v) {
                let mut pos = 0;
                assert!(!eat_key_value(&k, &mut pos, w), "{w:?} in {v:?}'s encoding");
                assert_eq!(pos, 0);
            }
            for cut in 0..k.len() {
                let mut pos = 0;
                assert!(!eat_key_value(&k[..cut], &mut pos, v), "{v:?} cut at {cut}");
            }
            let mut pos = k.len() + 5;
            assert!(!eat_key_value(&k, &mut pos, v), "{v:?} past the end");
        }
    }

    #[test]
    fn ints_sort_numerically_before_strings() {
        let mut vals = vec!["10", "9", "-3", "0", "a", "007", "-0", "9223372036854775807", "-9223372036854775808"];
        let mut enc: Vec<(Vec<u8>, &str)> = vals.iter().map(|v| (entry_key(&[v]), *v)).collect();
        enc.sort();
        let order: Vec<&str> = enc.iter().map(|e| e.1).collect();
        assert_eq!(order, ["-9223372036854775808", "-3", "0", "9", "10", "9223372036854775807", "-0", "007", "a"]);
        vals.sort();
        for v in vals {
            assert_eq!(decode_entry_key(&entry_key(&[v]), 1).unwrap(), vec![v.to_string()]);
        }
    }

    #[test]
    fn escaped_strings_keep_prefix_order() {
        let a = entry_key(&["a"]);
        let ab = entry_key(&["ab"]);
        let a_nul = entry_key(&["a\0"]);
        assert!(a < a_nul && a_nul < ab);
        let mut child = a.clone();
        child.extend_from_slice(b"zzz");
        assert!(child < ab, "a descendant of entry `a` sorts before entry `ab`");
    }

    #[test]
    fn appends_and_prepends_stay_short() {
        let mut last = order_first();
        for _ in 0..100_000 {
            let n = order_between(Some(&last), None).unwrap();
            assert!(n > last);
            last = n;
        }
        assert!(last.len() <= 5, "{last:?}");
        let mut first = order_first();
        for _ in 0..100_000 {
            let n = order_between(None, Some(&first)).unwrap();
            assert!(n < first && !n.contains(&0));
            first = n;
        }
        assert!(first.len() <= 5, "{first:?}");
    }

    #[test]
    fn between_is_strictly_between() {
        let mut keys = vec![order_first()];
        // Insert repeatedly right after the first key: nested fractions.
        for _ in 0..1000 {
            let a = keys[0].clone();
            let b = keys[1.min(keys.len() - 1)].clone();
            let n = if keys.len() == 1 { order_between(Some(&a), None) } else { order_between(Some(&a), Some(&b)) }
                .unwrap();
            assert!(n > a && (keys.len() == 1 || n < b) && !n.contains(&0), "{a:?} {n:?} {b:?}");
            keys.insert(1, n);
        }
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(keys.iter().map(Vec::len).max().unwrap() < 200);
    }

    #[test]
    fn random_inserts_make_well_formed_keys() {
        // A fixed linear congruential sequence: inserts at random places.
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut x: u64 = 7;
        for _ in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let at = (x >> 33) as usize % (keys.len() + 1);
            let a = at.checked_sub(1).map(|i| keys[i].as_slice());
            let b = keys.get(at).map(Vec::as_slice);
            let n = order_between(a, b).unwrap();
            assert!(is_order_key(&n), "{n:?}");
            assert!(a.is_none_or(|a| a < n.as_slice()) && b.is_none_or(|b| n.as_slice() < b));
            keys.insert(at, n);
        }
    }

    #[test]
    fn malformed_order_keys_are_refused_not_looped_on() {
        assert!(!is_order_key(&[]));
        assert!(!is_order_key(&[0x83, 0x00, 0x01, 0x01]));
        assert!(!is_order_key(&[0x40, 0x01]));
        assert!(is_order_key(&order_first()));
        let first = order_first();
        // Empty, with a 0x00 byte, ending in a fraction 0x01, or out of order.
        for (a, b) in [
            (Some(&[][..]), None),
            (None, Some(&[][..])),
            (Some(&[][..]), Some(&first[..])),
            (Some(&[0x40, 0x00][..]), None),
            (Some(&[0x40][..]), Some(&[0x40, 0x01][..])),
            (Some(&first[..]), Some(&first[..])),
            (Some(&[0x90][..]), Some(&[0x40][..])),
        ] {
            assert_eq!(order_between(a, b), None, "{a:?} {b:?}");
        }
        // Nothing fits between a fraction and its extension by 0x01: refused by
        // the bound on the walk even when the check above is bypassed.
        assert_eq!(frac_between(&[0x40], Some(&[0x40, 0x01])), None);
        assert_eq!(frac_between(&[], Some(&[])), None);
    }
}
