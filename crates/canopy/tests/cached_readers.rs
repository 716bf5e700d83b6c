//! With `cache=on`, readers never wait for a commit: not for its subscriber
//! callbacks, not for its flush. They read the tree of the last commit until
//! the new one is durable, then the new one.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use canopy::{ChangeEvent, Datastore, Store, Subscriber, Value};

/// Holds the commit in its `validate` until told to go on.
struct Stall {
    entered: mpsc::SyncSender<()>,
    go_on: std::sync::Mutex<mpsc::Receiver<()>>,
}

impl Subscriber for Stall {
    fn validate(&self, _: &ChangeEvent<'_>) -> Result<(), String> {
        let _ = self.entered.send(());
        let _ = self.go_on.lock().unwrap().recv();
        Ok(())
    }
}

fn value(store: &Store) -> Option<String> {
    let item = store.running().get_item("/m:c/v").unwrap();
    item.map(|s| format!("{s:?}"))
}

#[test]
fn a_reader_of_the_cached_store_is_not_blocked_by_a_stalled_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap());
    store.running().set("/m:c/v", Value::String("old".into())).unwrap();
    let before = value(&store);
    let (entered_tx, entered) = mpsc::sync_channel(1);
    let (go_on, go_on_rx) = mpsc::channel();
    let sub = store
        .subscribe(Datastore::Running, "/m:c", 0, Stall { entered: entered_tx, go_on: std::sync::Mutex::new(go_on_rx) })
        .unwrap();
    let writer = {
        let store = store.clone();
        std::thread::spawn(move || store.running().set("/m:c/v", Value::String("new".into())).map(|c| c.revision))
    };
    entered.recv_timeout(Duration::from_secs(20)).expect("the commit reached its subscriber");
    // The commit is stalled in `validate`: a reader on the same cached store
    // gets an answer, and it is the last committed value.
    let (read_tx, read) = mpsc::channel();
    {
        let store = store.clone();
        std::thread::spawn(move || {
            let _ = read_tx.send(value(&store));
        });
    }
    let seen = read.recv_timeout(Duration::from_secs(20));
    go_on.send(()).unwrap();
    let revision = writer.join().unwrap().unwrap();
    assert_eq!(seen.expect("a reader waited for a commit stalled in a subscriber callback"), before);
    // Once committed, the cached tree holds the new value.
    assert!(value(&store).unwrap().contains("new"), "{:?}", value(&store));
    assert_eq!(store.revision().unwrap(), revision);
    drop(sub);
}
