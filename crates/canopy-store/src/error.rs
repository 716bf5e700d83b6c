//! The storage error: a kind callers can branch on, and a message for users.

/// Result with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What kind of storage failure this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The store (file, directory, database) does not exist.
    NotFound,
    /// Another writer changed the store since the snapshot a batch was built on.
    Conflict,
    /// The store cannot be reached or locked now (server down, permissions).
    Unavailable,
    /// Stored data is not what canopy wrote: a damaged or foreign file.
    Corrupted,
    /// An operating-system I/O error.
    Io,
    /// The backend cannot do this (a key too long for it, a feature not built).
    Unsupported,
    /// A store URL or option that does not parse.
    InvalidUrl,
    /// The disk (or the user's quota) is full: nothing was stored.
    NoSpace,
}

/// A storage error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    kind: ErrorKind,
    message: String,
}

impl StoreError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> StoreError {
        StoreError { kind, message: message.into() }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The `Conflict` of a batch built on revision `built` committed through
    /// a view that read revision `read`.
    pub fn stale_batch(built: u64, read: u64) -> StoreError {
        StoreError::new(
            ErrorKind::Conflict,
            format!("the batch was built on revision {built}, not on the revision read ({read})"),
        )
    }

    pub fn corrupted(message: impl Into<String>) -> StoreError {
        StoreError::new(ErrorKind::Corrupted, message)
    }

    pub fn io(context: impl std::fmt::Display, e: std::io::Error) -> StoreError {
        if let Some(full) = StoreError::no_space(&context, e.raw_os_error()) {
            return full;
        }
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => ErrorKind::Unavailable,
            _ => ErrorKind::Io,
        };
        StoreError::new(kind, format!("{context}: {e}"))
    }

    /// [`ErrorKind::NoSpace`] for the operating system's error numbers of a
    /// full disk (`ENOSPC`) or quota (`EDQUOT`), saying so in words; `None` for
    /// other errors.
    pub fn no_space(context: &impl std::fmt::Display, errno: Option<i32>) -> Option<StoreError> {
        const ENOSPC: i32 = 28;
        const EDQUOT: i32 = 122;
        let what = match errno? {
            ENOSPC => "no space left on device",
            EDQUOT => "disk quota exceeded",
            _ => return None,
        };
        Some(StoreError::new(ErrorKind::NoSpace, format!("{context}: {what}")))
    }
}
