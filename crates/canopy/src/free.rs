//! Freeing big trees off the committing thread.
//!
//! Removing a list of 10,000 entries from a cached tree takes it out in
//! microseconds, but freeing it (every entry's names, keys and values) took
//! more than half the time of the whole delete on LMDB. What a commit takes
//! out of a cached tree is handed to one thread of the process that frees it.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Mutex, OnceLock};

/// Nodes below which garbage is freed in place (a channel send costs more).
pub(crate) const FREE_IN_PLACE_BELOW: usize = 256;

type Garbage = Box<dyn Send>;

/// Frees `garbage` on the freeing thread. At most two pieces wait: a commit
/// handing over more waits for the thread, so that commits faster than the
/// freeing do not pile up memory. Without the thread (it could not start),
/// `garbage` is freed here.
pub(crate) fn free_later<T: Send + 'static>(garbage: T) {
    static FREER: OnceLock<Option<Mutex<SyncSender<Garbage>>>> = OnceLock::new();
    let freer = FREER.get_or_init(|| {
        let (tx, rx) = sync_channel::<Garbage>(2);
        std::thread::Builder::new()
            .name("canopy-free".into())
            .spawn(move || {
                while let Ok(garbage) = rx.recv() {
                    drop(garbage);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    if let Some(tx) = freer.as_ref().and_then(|m| m.lock().ok()) {
        // A send fails only when the thread is gone: the garbage comes back
        // and is freed here.
        let _ = tx.send(Box::new(garbage));
    }
}
