//! Letting go of the memory map's pages during long scans. LMDB reads
//! through a read-only map of `data.mdb`: every page a scan touches stays
//! mapped into the process (counted in its resident memory) until the
//! kernel reclaims it, so a scan of a whole 400 MB store leaves the process
//! 400 MB larger. After every [`EVERY`] bytes scanned the backend tells the
//! kernel it no longer needs the map's pages (`MADV_DONTNEED`): on a shared,
//! read-only file mapping that only unmaps them from this process; they stay
//! in the page cache, and the next read of one maps it again from there
//! (a minor fault, no disk read). Nothing is written through the map
//! (canopy does not use `MDB_WRITEMAP`), so no data can be lost by it.
//!
//! LMDB does not say where its map is (`mdb_env_info` gives an address only
//! for fixed maps): the process's own map list (`/proc/self/maps`) does, by
//! the data file's name.

use std::path::Path;

/// Bytes of keys and values a snapshot scans between two releases.
pub(crate) const EVERY: usize = 32 << 20;

/// Unmaps every page of the maps of `data` (the canonical path of the
/// store's data file) from this process. Does nothing where the process's
/// maps cannot be read.
pub(crate) fn map_pages(data: &Path) {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
    let Some(name) = data.to_str() else { return };
    for line in maps.lines() {
        // "start-end perms offset dev inode   path"
        let mut fields = line.splitn(6, ' ');
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        if fields.nth(3).map(str::trim_start) != Some(name) || !perms.starts_with("r-") || !perms.ends_with('s') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            continue;
        };
        if end <= start {
            continue;
        }
        // SAFETY: the range is LMDB's read-only shared mapping of the data
        // file (a read-only, shared map of this very file, from the
        // process's own list); MADV_DONTNEED drops this process's page table
        // entries for it, and later reads fault the same file pages back in
        // from the page cache. The mapping itself stays, so no pointer into
        // it becomes invalid.
        let _ = unsafe {
            rustix::mm::madvise(start as *mut std::ffi::c_void, end - start, rustix::mm::Advice::LinuxDontNeed)
        };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_not_mapped_is_left_alone() {
        super::map_pages(std::path::Path::new("/nonexistent/data.mdb"));
    }
}
