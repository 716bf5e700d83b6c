//! Errors of the data model. Errors about data carry the path they concern.

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in parsing or applying data.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A path or query that does not parse; `pos` is the 0-based byte offset.
    /// The message quotes a long input only around `pos`.
    #[error("invalid path `{}` at position {pos}: {reason}", quote(input, *pos))]
    Path { input: String, pos: usize, reason: String },
    /// A JSON document that does not parse or is not RFC 7951 data.
    #[error("invalid JSON at line {line}, column {column}: {reason}")]
    Json { line: usize, column: usize, reason: String },
    /// A value that does not fit where it is put.
    #[error("invalid value for {path}: {reason}")]
    Value { path: String, reason: String },
    /// A node that must exist and does not (`delete`, `insert before`, ...).
    #[error("{path}: does not exist")]
    NotFound { path: String },
    /// A node that must not exist and does (`create`).
    #[error("{path}: already exists")]
    Exists { path: String },
    /// An edit or data that does not fit the data model at this path.
    #[error("{path}: {reason}")]
    Invalid { path: String, reason: String },
}

/// Inputs longer than this are quoted in part.
const QUOTE_MAX: usize = 200;

/// `input` for a message: whole when short, else its start and the part
/// around `pos`, with `…` where text is left out.
fn quote(input: &str, pos: usize) -> String {
    if input.len() <= QUOTE_MAX {
        return input.to_string();
    }
    let floor = |mut i: usize| {
        i = i.min(input.len());
        while !input.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let head = floor(QUOTE_MAX / 2);
    let from = floor(pos.saturating_sub(QUOTE_MAX / 4)).max(head);
    let to = floor(pos.saturating_add(QUOTE_MAX / 4));
    let mut out = input[..head].to_string();
    if from > head {
        out.push('…');
    }
    out.push_str(&input[from..to]);
    if to < input.len() {
        out.push('…');
    }
    out
}

impl Error {
    pub(crate) fn invalid(path: impl ToString, reason: impl Into<String>) -> Error {
        Error::Invalid { path: path.to_string(), reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_inputs_are_quoted_around_the_position() {
        let input = "/m:a".to_string() + &"/é".repeat(5000);
        let e = Error::Path { input: input.clone(), pos: 4001, reason: "here".into() }.to_string();
        assert!(e.len() < 400, "{e}");
        assert!(e.starts_with("invalid path `/m:a/é") && e.ends_with("…` at position 4001: here"), "{e}");
        let short = Error::Path { input: "/a[".into(), pos: 3, reason: "r".into() }.to_string();
        assert_eq!(short, "invalid path `/a[` at position 3: r");
    }
}
