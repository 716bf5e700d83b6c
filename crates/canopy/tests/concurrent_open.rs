//! Several connections opening a new store at once all open it: the one
//! that writes the layout record first wins, the others read it.

use std::sync::{Arc, Barrier};

#[test]
fn connections_opening_a_new_store_at_once_all_open_it() {
    let mut schemes = vec!["lmdb"];
    if cfg!(feature = "backend-sqlite") {
        schemes.push("sqlite");
    }
    if cfg!(feature = "backend-file") {
        schemes.extend(["json", "snapshot"]);
    }
    for scheme in schemes {
        for round in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("{scheme}:{}?sync=off", dir.path().join("s").display());
            let barrier = Arc::new(Barrier::new(8));
            let opened: Vec<_> = (0..8)
                .map(|_| {
                    let (url, barrier) = (url.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        canopy::Store::open(&url).map(|_| ())
                    })
                })
                .collect();
            for t in opened {
                if let Err(e) = t.join().unwrap() {
                    panic!("{scheme} round {round}: {e}");
                }
            }
        }
    }
}
