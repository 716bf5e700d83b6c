//! Giving disk space back. LMDB never shortens `data.mdb`: pages freed by
//! deletes are reused, but the file keeps its largest size. The only way to
//! shrink it is a compacting copy that replaces the file, and that is safe
//! only while no other process has the store open: a process that has it
//! open keeps reading and writing the old file (its commits would be lost),
//! and the lock file it shares would describe the old file's transactions.
//!
//! Every process that opens an LMDB environment holds a POSIX record lock
//! on `lock.mdb` (shared on its first byte, exclusive on the byte at its
//! process id while it reads). A process that takes a write lock on the whole
//! file without waiting is therefore the only one that has the store open,
//! and a process that opens the store meanwhile waits (in LMDB's open) until
//! the compacting process closes its environment, by which time `data.mdb`
//! is the compacted file.
//!
//! POSIX record locks belong to the process, not to the descriptor: closing
//! any descriptor of `lock.mdb` in this process releases LMDB's locks too.
//! The backend keeps one descriptor of it open for as long as the
//! environment, and never opens the file otherwise.

use std::fs;
use std::path::Path;

use canopy_store::error::{ErrorKind, Result, StoreError};
use rustix::fs::FlockOperation;

/// The lock file's name in the store directory.
pub(crate) const LOCK_FILE: &str = "lock.mdb";

/// A store file smaller than this is never compacted on its own.
pub(crate) const MIN_FILE: usize = 1 << 20;

/// Whether a store is worth compacting on its own: its file is at least
/// [`MIN_FILE`] long and its database holds less than a quarter of the file's
/// pages. A quarter makes the work pay for itself: the copy is at most a
/// quarter of the file, and the file only comes back to four times its data
/// after deletes of three quarters of what was there.
pub(crate) fn mostly_free(used_pages: usize, file_pages: usize, page_size: usize) -> bool {
    file_pages.saturating_mul(page_size) >= MIN_FILE && used_pages.saturating_mul(4) < file_pages
}

/// Opens the lock file for [`alone`] (read and write: a write lock needs both).
pub(crate) fn open_lock_file(dir: &Path) -> Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(LOCK_FILE))
        .map_err(|e| StoreError::io(format!("lmdb store {}: open {LOCK_FILE}", dir.display()), e))
}

/// Takes the whole lock file exclusively when no other process has the store
/// open (`true`); `false` when another process holds a lock on it. On `true`
/// the lock is held until the environment is closed, which releases it.
pub(crate) fn alone(dir: &Path, lock: &fs::File) -> Result<bool> {
    match rustix::fs::fcntl_lock(lock, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS => Ok(false),
        Err(e) => Err(StoreError::io(format!("lmdb store {}: lock {LOCK_FILE}", dir.display()), e.into())),
    }
}

/// The error of a compaction asked for while other processes have the store open.
pub(crate) fn not_alone(dir: &Path) -> StoreError {
    StoreError::new(
        ErrorKind::Unavailable,
        format!(
            "lmdb store {}: another process has the store open; compaction replaces {} and needs the store \
             to itself (stop the other processes, then compact)",
            dir.display(),
            super::DATA_FILE
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mostly_free_needs_a_big_file_and_a_quarter_used() {
        // 256 pages of 4 KiB = 1 MiB.
        assert!(mostly_free(63, 256, 4096));
        assert!(!mostly_free(64, 256, 4096));
        assert!(!mostly_free(1, 255, 4096));
        assert!(!mostly_free(usize::MAX, usize::MAX, 4096));
    }
}
