//! The library's error: data errors (with their path), storage errors (with
//! their kind), and misuse.

use canopy_store::ErrorKind;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad data, path, edit or JSON: the user's to fix.
    #[error(transparent)]
    Data(#[from] canopy_core::Error),
    /// The storage layer failed or refused.
    #[error(transparent)]
    Store(#[from] canopy_store::StoreError),
    /// Data that the store's YANG schema rejects: every problem found, each
    /// with its path. Nothing was stored.
    #[error("{}", violations(.0))]
    Invalid(Vec<canopy_core::Violation>),
    /// A YANG module that does not load (with file and line), or a schema
    /// that cannot be used.
    #[error("{0}")]
    Schema(String),
    /// An operation that does not fit its arguments.
    #[error("{0}")]
    Usage(String),
    /// Another connection holds the lock of the datastore written to.
    #[error("{0}")]
    Locked(String),
    /// Writing a read's output failed (a closed pipe, a full disk): the
    /// caller's writer, not the store.
    #[error("writing the output: {0}")]
    Output(#[source] std::io::Error),
    /// A change subscriber rejected the transaction; nothing was stored.
    #[error("the subscriber to {subtree} in {} rejected the transaction: {reason}", datastore.name())]
    Rejected { datastore: canopy_store::keys::Datastore, subtree: String, reason: String },
}

impl Error {
    /// Whether the error is about the user's input or setup (exit status 1 in
    /// the CLI) rather than an internal failure (exit status 2).
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Data(_)
            | Error::Usage(_)
            | Error::Locked(_)
            | Error::Rejected { .. }
            | Error::Invalid(_)
            | Error::Output(_)
            | Error::Schema(_) => true,
            Error::Store(e) => matches!(
                e.kind(),
                ErrorKind::InvalidUrl
                    | ErrorKind::NotFound
                    | ErrorKind::Unsupported
                    | ErrorKind::Conflict
                    | ErrorKind::Corrupted
                    | ErrorKind::Unavailable
                    | ErrorKind::NoSpace
            ),
        }
    }
}

fn violations(v: &[canopy_core::Violation]) -> String {
    match v {
        [one] => one.to_string(),
        _ => {
            let all: Vec<String> = v.iter().map(ToString::to_string).collect();
            format!("{} errors: {}", v.len(), all.join("; "))
        }
    }
}
