//! A long scan does not keep the store's pages mapped into the process: its
//! resident file-backed memory stays bounded while a snapshot scans a store
//! several times that size.

use canopy_lmdb::LmdbBackend;
use canopy_store::backend::{Backend, Batch, BatchOp};
use canopy_store::SyncMode;

/// This process's resident file-backed memory (`RssFile` in /proc), in bytes.
fn rss_file() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssFile:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[test]
fn scanning_a_big_store_keeps_resident_memory_bounded() {
    let Some(start) = rss_file() else { return }; // no /proc here
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Off).unwrap();
    // 160 MB of values, in batches of 16 MB.
    for chunk in 0..10u32 {
        let ops = (0..256u32)
            .map(|i| BatchOp::Put(format!("v/{chunk:02}/{i:04}").into_bytes(), vec![(i % 251) as u8; 64 << 10]))
            .collect();
        b.apply(&Batch { expect_revision: None, ops }).unwrap();
    }
    let snap = b.snapshot().unwrap();
    let (mut total, mut peak) = (0u64, 0u64);
    let mut sum = 0u64;
    snap.scan(b"v/", None, false, &mut |_, v| {
        // Read every page of the value, as a reader writing it out does.
        sum += v.iter().step_by(1024).map(|&b| u64::from(b)).sum::<u64>();
        total += v.len() as u64;
        if total % (8 << 20) == 0 {
            peak = peak.max(rss_file().unwrap_or(0));
        }
        Ok(true)
    })
    .unwrap();
    assert_eq!(total, 160 << 20);
    std::hint::black_box(sum);
    let grown = peak.saturating_sub(start);
    // The backend lets go of the map every 32 MB scanned: what stays mapped
    // is well under the 160 MB read.
    assert!(grown < 80 << 20, "resident file-backed memory grew by {} MB while scanning 160 MB", grown >> 20);
}
