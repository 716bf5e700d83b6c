//! Errors of the data model. Errors about data carry the path they concern.

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in parsing or applying data.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A path or query that does not parse; `pos` is the 0-based byte offset.
    #[error("invalid path `{input}` at position {pos}: {reason}")]
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

impl Error {
    pub(crate) fn invalid(path: impl ToString, reason: impl Into<String>) -> Error {
        Error::Invalid { path: path.to_string(), reason: reason.into() }
    }
}
